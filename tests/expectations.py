"""Inline expectations: `# expect: IDX001, IDX002` on the lines that must be flagged with a
finding that fails the scan, `# expect-note: IDX002` on those that must carry a note (a value
nothing reads)."""

from __future__ import annotations

import re
from pathlib import Path

_CODES = r"([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)"
EXPECT = re.compile(r"#\s*expect:\s*" + _CODES)
EXPECT_NOTE = re.compile(r"#\s*expect-note:\s*" + _CODES)


def _parse(text: str, display: str, pattern: re.Pattern[str]) -> set[tuple[str, int, str]]:
    found: set[tuple[str, int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = pattern.search(line)
        if match:
            for code in match.group(1).split(","):
                found.add((display, number, code.strip()))
    return found


def expectations(path: Path, display: str) -> set[tuple[str, int, str]]:
    """Every expected finding and note of the file."""
    return expectations_in_text(path.read_text(), display)


def expectations_in_text(text: str, display: str) -> set[tuple[str, int, str]]:
    return _parse(text, display, EXPECT) | _parse(text, display, EXPECT_NOTE)


def note_expectations(path: Path, display: str) -> set[tuple[str, int, str]]:
    """The places and codes that must be notes."""
    return _parse(path.read_text(), display, EXPECT_NOTE)
