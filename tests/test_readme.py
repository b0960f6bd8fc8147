"""The README: its generated rule table matches what the CLI prints, it gives the set-up and test
commands that CI runs, and it stays short (the detail is in docs/).
After an intended change: IDXCHECK_UPDATE_DOCS=1 python -m pytest tests/test_readme.py"""

from __future__ import annotations

import re

from idxcheck.rules.catalog import catalogue

from .conftest import ROOT
from .docs_gen import UPDATE, generate, refresh, sources, stale_blocks, updating

README = ROOT / "README.md"
LIMIT = 10 * 1024
SETUP = "pip install . && idxcheck scan fixtures/bugs"
TESTS = "pip install torch==2.13.0 -e '.[dev,runtime]' && python -m pytest -q"


def code_lines(text: str) -> list[str]:
    """The lines of the fenced code blocks."""
    return [
        line
        for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
        for line in block.splitlines()
    ]


def test_generated_blocks_match_the_cli() -> None:
    text = README.read_text(encoding="utf-8")
    assert "idxcheck rules --format markdown" in sources(text)
    if updating():
        text = refresh(text)
        README.write_text(text, encoding="utf-8")
    stale = stale_blocks(text)
    assert not stale, f"README blocks {stale} are out of date: {UPDATE}"


def test_rule_table_lists_every_rule() -> None:
    table = generate("idxcheck rules --format markdown")
    for rule in catalogue():
        assert f"| {rule.code} | {rule.name} | {rule.severity} | {rule.summary} |" in table


def test_readme_is_at_most_10_kib() -> None:
    size = len(README.read_bytes())
    assert size <= LIMIT, f"README.md is {size} bytes, over {LIMIT}: move the detail to docs/"


def test_readme_gives_the_commands_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    lines = code_lines(text)
    assert SETUP in lines
    assert TESTS in lines
    # .ci/run ends with the README's test command, after installing what that command needs.
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert ci[-1] == TESTS
    assert any("apt-get install" in line and "chromium shellcheck" in line for line in ci)
    for needed in ("`chromium`", "`shellcheck`", "`.ci/run`", "`apt-get`"):
        assert needed in text, needed
