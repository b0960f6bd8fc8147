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
    # `# idxcheck: ignore-file[...]`: the findings of its codes anywhere in the file (of every
    # code where it names none), not those of its line.
    file_level: bool = False

    def matches(self, code: str) -> bool:
        """Whether a finding of `code` is one this comment names (a bare file-level comment
        names every code; a bare line comment none)."""
        return code in self.codes or (self.file_level and not self.codes)

    @property
    def span(self) -> Span:
        return Span(self.path, self.line, self.column, self.line, self.end_column)


@dataclass(frozen=True)
class FileComments:
    path: str
    suppressions: tuple[Suppression, ...]
    # physical line -> first line of the statement (logical line) it belongs to
    statement_start: dict[int, int] = field(default_factory=dict)

    @property
    def line_level(self) -> tuple[Suppression, ...]:
        return tuple(s for s in self.suppressions if not s.file_level)

    @property
    def file_level(self) -> tuple[Suppression, ...]:
        return tuple(s for s in self.suppressions if s.file_level)

    def lines_for(self, line: int) -> tuple[int, ...]:
        start = self.statement_start.get(line, line)
        return (line,) if start == line else (line, start)
