"""What the runtime lays out: query tokens per request, per forward mode.

Each mode may be served by several runners (a target runner and a draft runner, say); each is a
`RunnerWidth` with the condition under which it runs. The profile supplies defaults; runners
read from the scanned tree replace them per mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.profile import Profile
from idxcheck.spans import Span
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
    # A condition on the batch (`spec_info is None`) that tells this runner's batches from
    # another's in the same mode: a site is compared with this runner only when its own path
    # tests that condition, since otherwise nothing says which runner's batches it sees.
    selector: str | None = None


@dataclass(frozen=True)
class RuntimeModel:
    widths: dict[str, tuple[RunnerWidth, ...]]
    phase_widths: dict[str, Term]
    notes: tuple[str, ...] = field(default=())

    def for_mode(self, mode: str) -> tuple[RunnerWidth, ...]:
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
    return RuntimeModel(widths, dict(profile.phase_widths))
