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

import re
from collections.abc import Iterable

from idxcheck.profiles.schema import Profile
from idxcheck.source.files import SourceFile, reading

# `<object>.forward_mode = <value>`, but for `self.forward_mode` (a runner's own capture mode;
# `self.batch.forward_mode` is a batch).
_ASSIGNED = re.compile(
    r"(?<![\w.])(?!self\.forward_mode\b)[A-Za-z_][\w.]*\.forward_mode[ \t]*=(?!=)"
)
# `forward_mode=ForwardMode.X` as a keyword argument.
_KEYWORD = re.compile(r"[(,]\s*forward_mode\s*=\s*ForwardMode\.([A-Z][A-Z0-9_]*)")
_MEMBER = re.compile(r"ForwardMode\.([A-Z][A-Z0-9_]*)")


def batch_modes(text: str) -> frozenset[str]:
    """The modes the text puts a batch in."""
    if "forward_mode" not in text or "ForwardMode." not in text:
        return frozenset()
    found: set[str] = set(_KEYWORD.findall(text))
    for match in _ASSIGNED.finditer(text):
        found.update(_MEMBER.findall(_value_text(text, match.end())))
    return frozenset(found)


def _value_text(text: str, start: int) -> str:
    """The text of the value assigned from `start`: to the end of the line, or to the closing
    bracket of one that opens there."""
    i = start
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "(":
        end = text.find("\n", i)
        return text[i : end if end >= 0 else len(text)]
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[i : j + 1]
    return text[i:]


def file_batch_modes(source: SourceFile) -> frozenset[str]:
    """`batch_modes` of a file's text, read once per text (`reading`)."""
    return reading(source, "batch-modes", lambda: batch_modes(source.text))


def modes_not_run(
    files: Iterable[SourceFile], profile: Profile, members: Iterable[str]
) -> dict[str, str]:
    """The profile's worker modes among `members` that the tree's files never put a batch in,
    each with why, where the tree puts a batch in one of the evidence modes."""
    produced: dict[str, str] = {}
    for source in files:
        for mode in file_batch_modes(source):
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


def feeds_batch_modes(source: SourceFile, profile: Profile) -> bool:
    """Whether the file puts a batch in a mode `modes_not_run` looks at."""
    watched = set(profile.worker_modes) | set(profile.worker_evidence)
    return bool(file_batch_modes(source) & watched)
