"""What the runtime lays out: query tokens per request, per forward mode.

Each mode may be served by several runners (a target runner and a draft runner, say); each is a
`RunnerWidth` with the condition under which it runs. The profile supplies defaults; runners
read from the scanned tree replace them per mode."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from idxcheck.model.spans import Span
from idxcheck.profiles.schema import DefaultWidth, Profile
from idxcheck.sym.terms import TRUE, Formula, Term


@dataclass(frozen=True)
class RunnerWidth:
    mode: str
    term: Term
    text: str  # the width as written where it was read
    source: str  # a sentence saying where the fact comes from
    cond: Formula = TRUE
    span: Span | None = None
    from_profile: bool = False
    runner: str = ""  # the runner class, when read from the tree
    # Stated by the configuration (`VllmConfig.uniform_decode_query_len`), not by a runner:
    # used only in a mode no runner of the tree states.
    from_config: bool = False
    # A condition on the batch (`spec_info is None`) that tells this runner's batches from
    # another's in the same mode: a site is compared with this runner only when its own path
    # tests that condition, since otherwise nothing says which runner's batches it sees.
    selector: str | None = None
    # In a mode whose requests are packed (`Profile.packed_modes`), where `term` is the most
    # tokens a request can have: the runner's own width, what it captures with.
    capacity: str = ""


@dataclass(frozen=True)
class RuntimeModel:
    widths: dict[str, tuple[RunnerWidth, ...]]
    phase_widths: dict[str, Term]
    notes: tuple[str, ...] = field(default=())
    # Per packed mode: the most tokens a request can have, per runner (`packed_widths`).
    most: dict[str, tuple[RunnerWidth, ...]] = field(default_factory=dict)
    # Modes of the tree that do not run, each with why (`idxcheck.facts.batch_modes`).
    not_run: dict[str, str] = field(default_factory=dict)
    # Per mode, the speculative algorithms whose servers never run it
    # (`idxcheck.facts.batch_modes.algorithms_not_run`).
    algorithms_not_run: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def for_mode(self, mode: str, most: bool = False) -> tuple[RunnerWidth, ...]:
        """The runners of `mode` with their width per request; `most`: with the most tokens
        a request can have instead, where the mode packs fewer than that width."""
        if most and mode in self.most:
            return self.most[mode]
        return self.widths.get(mode, ())


def default_runtime_model(profile: Profile) -> RuntimeModel:
    widths: dict[str, tuple[RunnerWidth, ...]] = {
        mode: (
            RunnerWidth(
                mode=mode,
                term=default.term,
                text=default.text,
                source=default.source,
                from_profile=True,
            ),
        )
        for mode, default in profile.default_widths.items()
    }
    return RuntimeModel(
        widths,
        dict(profile.phase_widths),
        most={
            mode: packed_widths(packed, widths.get(mode, ()))
            for mode, packed in profile.packed_modes.items()
        },
    )


def packed_widths(
    packed: DefaultWidth, runners: tuple[RunnerWidth, ...]
) -> tuple[RunnerWidth, ...]:
    """The most tokens a request of a packed mode can have (`packed`), per runner of the mode
    (which keeps its place, class and conditions, and its own width as what it captures
    with); the profile's fact alone where no runner was read."""
    found = tuple(
        replace(
            runner,
            term=packed.term,
            text=packed.text,
            source=packed.source,
            capacity=runner.text,
        )
        for runner in runners
        if not runner.from_profile
    )
    return found or (
        RunnerWidth(
            mode=packed.mode,
            term=packed.term,
            text=packed.text,
            source=packed.source,
            from_profile=True,
        ),
    )
