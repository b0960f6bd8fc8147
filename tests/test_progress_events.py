"""The scan's progress as events (`model.progress`), and the line drawn of them
(`cli.progress`), apart from a terminal: the steps in order, an analysis that moves file by
file and obligation by obligation (in workers too), a line that fits the terminal, is redrawn
in place at most ten times a second and is erased at the end."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from idxcheck.app.api import scanned
from idxcheck.cli.progress import ERASE, ProgressLine, State, line
from idxcheck.model.config import Config
from idxcheck.model.progress import Event, Step

from .conftest import ROOT

BUG = ROOT / "fixtures/bugs/eagle_draft_extend_v2.py"


class Heard:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(self, event: Event) -> None:
        self.events.append(event)


def tree(tmp_path: Path, backends: int, plain: int) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(backends):
        shutil.copy(BUG, root / f"backend_{i}.py")
    for i in range(plain):
        (root / f"module_{i}.py").write_text(f"VALUE = {i}\n")
    return root


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_analysis_is_heard_file_by_file_and_obligation_by_obligation(
    tmp_path: Path, jobs: int
) -> None:
    heard = Heard()
    scanned([str(tree(tmp_path, 4, 6))], Config(jobs=jobs), progress=heard)
    steps = [e.step for e in heard.events]
    # The steps in their order, each once.
    assert list(dict.fromkeys(steps)) == [Step.READING, Step.PARSING, Step.ANALYSING]
    reading = [e for e in heard.events if e.step == Step.READING]
    assert reading[-1] == Event(Step.READING, 10, 10)
    analysing = [e for e in heard.events if e.step == Step.ANALYSING]
    assert {(e.total, e.classes) for e in analysing} == {(4, 4)}
    # It moves: the files done and the obligations solved only grow, through many states,
    # and end with every file (each backend's obligations: 6, as the bug fixture has).
    assert [e.done for e in analysing] == sorted(e.done for e in analysing)
    assert [e.solved for e in analysing] == sorted(e.solved for e in analysing)
    assert len({(e.done, e.solved) for e in analysing}) >= 5
    assert (analysing[-1].done, analysing[-1].solved) == (4, 24)


def test_a_plain_progress_function_hears_the_counted_steps(tmp_path: Path) -> None:
    heard: list[tuple[int, int]] = []
    scanned([str(tree(tmp_path, 2, 3))], Config(), progress=lambda d, t: heard.append((d, t)))
    assert (5, 5) in heard  # the files read
    assert heard[-1] == (2, 2)  # the files analysed


def state(event: Event, started: float = 0.0) -> State:
    return State(event, started, started)


def test_the_line_says_the_step_in_words() -> None:
    assert line(state(Event(Step.READING, 10, 40)), 3.0, 100) == (
        "reading 40 files  [#####---------------] 10/40  0:03"
    )
    assert line(state(Event(Step.PARSING)), 65.0, 100) == (
        "parsing runners, forward modes and constraints  1:05"
    )
    assert line(state(Event(Step.ANALYSING, 1, 87, classes=312, solved=1234)), 0.0, 100) == (
        "analysing 312 classes in 87 files  [--------------------] 1/87  1,234 obligations "
        "solved  0:00"
    )
    assert line(state(Event(Step.CONFIRMING, 1, 1)), 0.0, 100).startswith("confirming 1 finding ")


def test_the_line_never_wraps() -> None:
    event = Event(Step.ANALYSING, 1, 87, classes=312, solved=1234)
    for columns in (1, 2, 5, 30, 60):
        drawn = line(state(event), 0.0, columns)
        assert len(drawn) <= max(columns - 1, 1)
    assert line(state(event), 0.0, 30).endswith("...")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_redrawn_in_place_at_most_ten_times_a_second_and_erased() -> None:
    stream = io.StringIO()
    clock = Clock()
    drawn = ProgressLine(stream, minimum=20, clock=clock, columns=lambda: 80)
    drawn.event(Event(Step.READING, 0, 40))
    for done in range(1, 40):
        clock.now += 0.01  # 39 events in 0.39 s: four redraws, not 39
        drawn.event(Event(Step.READING, done, 40))
    drawn.event(Event(Step.READING, 40, 40))  # the step's end is drawn whatever the time
    drawn.event(Event(Step.PARSING))  # so is a new step
    drawn.close()
    out = stream.getvalue()
    lines = out.split(ERASE)
    assert lines[0] == "" and lines[-1] == ""  # each draw starts by erasing; the end erases
    assert 4 <= len(lines) - 2 <= 8
    assert any(d.startswith("reading 40 files") and "40/40" in d for d in lines)
    assert lines[-2].startswith("parsing ")
    assert "\n" not in out


def test_nothing_is_drawn_for_a_short_run() -> None:
    stream = io.StringIO()
    drawn = ProgressLine(stream, minimum=20, clock=Clock(), columns=lambda: 80)
    drawn.event(Event(Step.READING, 0, 3))
    drawn.event(Event(Step.PARSING))
    drawn.event(Event(Step.ANALYSING, 1, 1, classes=1, solved=6))
    drawn.close()
    assert stream.getvalue() == ""
