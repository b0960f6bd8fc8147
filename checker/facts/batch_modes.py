"""Which forward modes the scanned tree puts a batch in, read from its text.

A worker puts a batch in a mode (`batch.forward_mode = (ForwardMode.DRAFT_EXTEND if ... else
ForwardMode.IDLE)`), or builds one in it (`ForwardBatch(..., forward_mode=ForwardMode.DECODE)`);
a graph runner replays the batches it is handed in their mode, so its own
`self.forward_mode = ForwardMode.X` does not count. Where the tree's speculative workers are
scanned (it puts a batch in one of the profile's `worker_evidence` modes), a mode of the
profile's `worker_modes` that no code puts a batch in does not run: SGLang 0.5.13 keeps
`ForwardMode.DRAFT_EXTEND` but no longer has the EAGLE v1 worker that used it.

Reading the text, not the code, can miss a producer (a mode held in a variable first); a missed
producer loses that mode's findings, it never makes one."""

from __future__ import annotations

from collections.abc import Iterable

from idxcheck.profiles.schema import Profile
from idxcheck.source.files import SourceFile
from idxcheck.source.prefilter import file_batch_modes


def modes_not_run(
    files: Iterable[SourceFile], profile: Profile, members: Iterable[str]
) -> dict[str, str]:
    """The profile's worker modes among `members` that the tree's files never put a batch in,
    each with why, where the tree puts a batch in one of the evidence modes."""
    produced: dict[str, str] = {}
    for source in files:
        for mode in file_batch_modes(source, profile):
            produced.setdefault(mode, source.path)
    evidence = [produced[m] for m in profile.worker_evidence if m in produced]
    if not evidence:
        return {}
    return {
        mode: (
            f"no code of the scanned tree puts a batch in {mode} ({why}); its speculative "
            f"workers are scanned ({evidence[0]} puts batches in other modes)"
        )
        for mode, why in profile.worker_modes.items()
        if mode in members and mode not in produced
    }


def algorithms_not_run(
    files: Iterable[SourceFile], profile: Profile, members: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """For each mode of the profile's `algorithm_modes` among `members`: the algorithms whose
    servers never run it, where every file of the tree that puts a batch in it has the
    profile's word in its path (and one does). A producer elsewhere, or none among the
    scanned files, assumes nothing."""
    present = set(members)
    wanted = {m: entry for m, entry in profile.algorithm_modes.items() if m in present}
    if not wanted:
        return {}
    producers: dict[str, list[str]] = {}
    for source in files:
        for mode in file_batch_modes(source, profile) & set(wanted):
            producers.setdefault(mode, []).append(source.path)
    return {
        mode: algorithms
        for mode, (algorithms, word, _why) in wanted.items()
        if producers.get(mode) and all(word in path for path in producers[mode])
    }
