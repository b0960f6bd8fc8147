"""Inline expectations: `# expect: IDX001, IDX002` on the lines that must be flagged."""

from __future__ import annotations

import re
from pathlib import Path

EXPECT = re.compile(r"#\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expectations(path: Path, display: str) -> set[tuple[str, int, str]]:
    found: set[tuple[str, int, str]] = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group(1).split(","):
                found.add((display, number, code.strip()))
    return found


def expectations_in_text(text: str, display: str) -> set[tuple[str, int, str]]:
    found: set[tuple[str, int, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group(1).split(","):
                found.add((display, number, code.strip()))
    return found
