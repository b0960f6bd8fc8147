"""The progress line on stderr: the step a scan is in, in words, how far it is, and for how
long; redrawn in place (carriage return, erase to the end of the line) at most ten times a
second, never wider than the terminal (a wrapped line could not be redrawn), and erased when
the run ends, so that nothing of it stays above the report.

`line` is a pure function of what was heard and the time, tested apart from the terminal."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import IO

from idxcheck.model.progress import Event, Step

# Redraws a second at most: a whole tree's analysis solves thousands of obligations.
REDRAWS_PER_SECOND = 10
BAR_CELLS = 20
ERASE = "\r\x1b[K"  # to the line's start, and erase to its end


@dataclass(frozen=True)
class State:
    """What the line shows: the latest event, and when the run and its step started."""

    event: Event
    started: float
    step_started: float


def line(state: State, now: float, columns: int) -> str:
    """The progress line, at most `columns - 1` characters wide."""
    event = state.event
    words = _words(event)
    parts = [words]
    if event.total:
        filled = BAR_CELLS * min(event.done, event.total) // event.total
        parts.append(f"[{'#' * filled}{'-' * (BAR_CELLS - filled)}] {event.done}/{event.total}")
    if event.step == Step.ANALYSING:
        parts.append(f"{event.solved:,} obligations solved")
    parts.append(_clock(now - state.started))
    text = "  ".join(parts)
    width = max(columns - 1, 1)
    if len(text) <= width:
        return text
    return text[:width] if width <= 3 else text[: width - 3] + "..."


def _words(event: Event) -> str:
    if event.step == Step.READING:
        return f"reading {_count(event.total, 'file')}"
    if event.step == Step.PARSING:
        return "parsing runners, forward modes and constraints"
    if event.step == Step.ANALYSING:
        return f"analysing {_count(event.classes, 'class')} in {_count(event.total, 'file')}"
    return f"confirming {_count(event.total, 'finding')}"


def _count(number: int, noun: str) -> str:
    plural = noun if number == 1 else noun + ("es" if noun.endswith("s") else "s")
    return f"{number:,} {plural}"


def _clock(seconds: float) -> str:
    whole = int(max(seconds, 0))
    return f"{whole // 60}:{whole % 60:02d}"


class ProgressLine:
    """An `EventSink` (and a plain `progress(done, total)`, for confirmation) that draws on
    `stream`. It draws only once the run shows it is long: `minimum` files to read (or a
    counted step of `minimum` items where none is read, as confirmation's)."""

    def __init__(
        self,
        stream: IO[str],
        minimum: int,
        clock: Callable[[], float] = time.monotonic,
        columns: Callable[[], int] = lambda: shutil.get_terminal_size((80, 24)).columns,
    ) -> None:
        self._stream = stream
        self._minimum = minimum
        self._clock = clock
        self._columns = columns
        self._state: State | None = None
        self._shown: bool | None = None  # None: not decided yet
        self._drawn_at = float("-inf")
        self._text = ""
        self.drawn = False  # something is on the line now

    def event(self, event: Event) -> None:
        now = self._clock()
        new_step = self._state is None or event.step != self._state.event.step
        if self._state is None:
            self._state = State(event, now, now)
        elif new_step:
            self._state = State(event, self._state.started, now)
        else:
            self._state = replace(self._state, event=event)
        if self._shown is None and event.total:
            self._shown = event.total >= self._minimum
        if not self._shown:
            return
        finished = bool(event.total) and event.done >= event.total
        if new_step or finished or now - self._drawn_at >= 1 / REDRAWS_PER_SECOND:
            self._draw(now)

    def __call__(self, done: int, total: int) -> None:
        self.event(Event(Step.CONFIRMING, done, total))

    def _draw(self, now: float) -> None:
        assert self._state is not None
        text = line(self._state, now, self._columns())
        if self.drawn and text == self._text:
            return  # the same line: nothing to redraw
        self._stream.write(ERASE + text)
        self._stream.flush()
        self._drawn_at = now
        self._text = text
        self.drawn = True

    def close(self) -> None:
        """Erase the line, if one was drawn: the report and later messages start clean."""
        if self.drawn:
            self._stream.write(ERASE)
            self._stream.flush()
            self.drawn = False
