"""What a scan reports of its progress, as data: the step it is in and how far it is, for a
progress bar (`cli.progress`) or a library caller.

A caller hands a scan either a plain `progress(done, total)` function, which is called with
the count of the step under way (the files read, then the files analysed), or an object with
an `event(Event)` method, which gets every step with its words (`emit`)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class Step(enum.Enum):
    """A scan's steps, in their order."""

    READING = "reading"  # the files walked, read and prefiltered: `done` of `total` files
    PARSING = "parsing"  # the tree facts: forward modes, runners' widths, stated constraints
    ANALYSING = "analysing"  # each file's classes interpreted and their obligations solved
    CONFIRMING = "confirming"  # findings replayed on a kernel: `done` of `total` findings


@dataclass(frozen=True)
class Event:
    step: Step
    done: int = 0
    total: int = 0  # 0: the step is not counted (`done` is then 0 too)
    # ANALYSING: the classes and functions the files to analyse hold that may hold a site,
    # and the obligations solved so far (from the verdict cache or the solver).
    classes: int = 0
    solved: int = 0


@runtime_checkable
class EventSink(Protocol):
    def event(self, event: Event) -> None: ...


# A plain progress function: `progress(done, total)` of the step under way.
Counter = Callable[[int, int], None]
Progress = Counter | EventSink


def emit(progress: Progress | None, event: Event) -> None:
    """`event` to `progress`: whole to an `EventSink`, as its counts to a plain function
    (which hears nothing of a step that is not counted)."""
    if progress is None:
        return
    if isinstance(progress, EventSink):
        progress.event(event)
    elif event.total:
        progress(event.done, event.total)
