"""Suppression comments as data: each comment's codes and place, and a file's comments."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.model.spans import Span


@dataclass(frozen=True)
class Suppression:
    path: str
    line: int  # 1-based line of the comment
    column: int  # 0-based column of the `idxcheck:` marker
    end_column: int
    codes: tuple[str, ...]
    reason: str
    text: str  # the comment as written, for messages and fingerprints

    @property
    def span(self) -> Span:
        return Span(self.path, self.line, self.column, self.line, self.end_column)


@dataclass(frozen=True)
class FileComments:
    path: str
    suppressions: tuple[Suppression, ...]
    # physical line -> first line of the statement (logical line) it belongs to
    statement_start: dict[int, int] = field(default_factory=dict)

    def lines_for(self, line: int) -> tuple[int, ...]:
        start = self.statement_start.get(line, line)
        return (line,) if start == line else (line, start)
