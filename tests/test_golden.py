"""Golden outputs of every reporter, compared exactly.

The input is two fixtures (the motivating bug and its fix) and a backend with one suppression
comment of each kind. Timings are zeroed and paths are relative, so the outputs are the same on
every machine. After an intended change, regenerate with

    IDXCHECK_UPDATE_GOLDENS=1 python -m pytest tests/test_golden.py

and review the diff under fixtures/golden/."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from idxcheck.app.api import scan
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
from idxcheck.report import concise, github, html, json_format, junit, markdown, sarif, text
from idxcheck.report.context import Report

from .conftest import FIXTURES
from .sarif_check import assert_valid_sarif

GOLDEN = FIXTURES / "golden"
INPUTS = [
    "fixtures/bugs/eagle_draft_extend_v2.py",
    "fixtures/correct/eagle_full_fix.py",
    "fixtures/golden/inputs/suppressed_backend.py",
]
UPDATE = bool(os.environ.get("IDXCHECK_UPDATE_GOLDENS"))
# Where the golden reports link rule pages (not the environment's or the installed metadata's).
DOCS_URL = "https://example.org/idxcheck/docs"


def golden_report() -> Report:
    outcome = scan(INPUTS, Config())
    result = outcome.result
    # The only measured value in any report.
    result = replace(result, stats=replace(result.stats, seconds=0.0))
    return Report(
        result=result,
        suppressed=tuple((s.finding, s.comment) for s in outcome.suppressed),
        exit_code=1 if outcome.result.findings else 0,
        mode_order=load_profile("sglang").mode_members,
        docs_url=DOCS_URL,
    )


RENDERERS: dict[str, Callable[[Report], str]] = {
    "text.txt": lambda r: text.render(r),
    "text-explain.txt": lambda r: text.render(r, explain=True),
    "text-color.txt": lambda r: text.render(r, color=True),
    "text-statistics.txt": lambda r: text.render(r, statistics=True),
    "concise.txt": lambda r: concise.render(r),
    "report.json": json_format.render,
    "report.sarif": sarif.render,
    "github.txt": github.render,
    "summary.md": markdown.render,
    "junit.xml": junit.render,
    "report.html": html.render,
}


@pytest.fixture(scope="module")
def report() -> Report:
    return golden_report()


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_golden(name: str, report: Report) -> None:
    got = RENDERERS[name](report)
    path = GOLDEN / name
    if UPDATE:
        path.write_text(got, encoding="utf-8")
    assert path.is_file(), f"{path} is missing: run with IDXCHECK_UPDATE_GOLDENS=1 to create it"
    assert got == path.read_text(encoding="utf-8"), (
        f"{name} differs from its golden; if the change is intended, regenerate with "
        "IDXCHECK_UPDATE_GOLDENS=1 and review the diff"
    )


def test_goldens_are_deterministic_and_portable(report: Report) -> None:
    """No absolute paths, no timings; rendering twice gives the same bytes."""
    again = golden_report()
    for name, render in RENDERERS.items():
        out = render(report)
        assert out == render(again), name
        assert str(Path.cwd()) not in out, name
        assert "/tmp/" not in out, name


def test_golden_sarif_is_valid() -> None:
    assert_valid_sarif(json.loads((GOLDEN / "report.sarif").read_text(encoding="utf-8")))


def test_golden_input_exercises_every_kind(report: Report) -> None:
    codes = [f.code for f in report.findings]
    assert {"IDX001", "IDX002", "IDX900", "IDX901"} <= set(codes)
    assert {f.code for f, _ in report.suppressed} == {"IDX001", "IDX002"}
