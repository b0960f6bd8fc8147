"""The backend x forward-mode matrix: one row per backend class (`path:Class`), one column per
forward mode, each cell the worst verdict of the obligations checked there. Built from every
obligation's verdict (`ScanResult.outcomes`), so proved cells show as proved rather than blank.

Cell categories, best to worst: proved (PROVED or UNREACHABLE), unsupported, unknown, latent
(refuted by a rule of severity "warning": wrong, but no row is lost at the real block sizes),
refuted."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.model.findings import Finding
from idxcheck.model.verdicts import Verdict
from idxcheck.report.context import Report
from idxcheck.rules.catalog import catalogue

CATEGORIES = ("proved", "unsupported", "unknown", "latent", "refuted")
_RANK = {name: i for i, name in enumerate(CATEGORIES)}


@dataclass(frozen=True)
class Row:
    path: str
    owner: str  # the class (or module-level function) the sites belong to

    @property
    def label(self) -> str:
        return f"{self.path}:{self.owner}"


@dataclass
class Cell:
    category: str = "proved"
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[int] = field(default_factory=list)  # indexes into Report.findings
    suppressed: int = 0
    reasons: list[str] = field(default_factory=list)  # why a cell is unknown/unsupported

    def add(self, category: str) -> None:
        self.counts[category] = self.counts.get(category, 0) + 1
        self.category = max(self.counts, key=_RANK.__getitem__)


@dataclass(frozen=True)
class Matrix:
    rows: tuple[Row, ...]
    modes: tuple[str, ...]
    cells: dict[tuple[Row, str], Cell]
    loose: tuple[int, ...]  # findings outside the matrix (suppression comments)


def owner_of(function: str) -> str:
    return function.split(".", 1)[0] if function else ""


def category_of(verdict: Verdict, severity: str) -> str:
    if verdict == Verdict.REFUTED:
        return "refuted" if severity == "error" else "latent"
    if verdict == Verdict.UNKNOWN:
        return "unknown"
    if verdict == Verdict.UNSUPPORTED:
        return "unsupported"
    return "proved"


def _cell(cells: dict[tuple[Row, str], Cell], row: Row, mode: str) -> Cell:
    if (row, mode) not in cells:
        cells[(row, mode)] = Cell()
    return cells[(row, mode)]


def build(report: Report) -> Matrix:
    severity = {info.code: info.severity for info in catalogue()}
    cells: dict[tuple[Row, str], Cell] = {}
    for note in report.result.outcomes:
        row = Row(note.span.path, owner_of(note.function))
        cell = _cell(cells, row, note.mode)
        cell.add(category_of(note.verdict, severity.get(note.code, "error")))
        if (
            note.verdict in (Verdict.UNKNOWN, Verdict.UNSUPPORTED)
            and note.reason
            and note.reason not in cell.reasons
        ):
            cell.reasons.append(note.reason)
    loose: list[int] = []
    for index, finding in enumerate(report.findings):
        if not finding.mode:
            loose.append(index)
            continue
        row = Row(finding.span.path, owner_of(finding.function))
        key = _find_row(cells, row, finding)
        cell = _cell(cells, key, finding.mode)
        cell.findings.append(index)
        if not cell.counts:  # a finding without an outcome (should not happen): still shown
            cell.add(category_of(finding.verdict, finding.severity))
    for finding, _comment in report.suppressed:
        if finding.mode:
            row = _find_row(cells, Row(finding.span.path, owner_of(finding.function)), finding)
            if (row, finding.mode) in cells:
                cells[(row, finding.mode)].suppressed += 1
    rows = tuple(sorted({row for row, _ in cells}, key=lambda r: (r.path, r.owner)))
    present = {mode for _, mode in cells}
    ordered = [m for m in report.mode_order if m in present]
    ordered += sorted(present - set(ordered))
    return Matrix(rows, tuple(ordered), cells, tuple(loose))


def _find_row(cells: dict[tuple[Row, str], Cell], row: Row, finding: Finding) -> Row:
    """The row of a finding: its own file and class, or the class's row in another file when
    the primary span sits elsewhere (a width bound in a helper module)."""
    if any(r == row for r, _ in cells):
        return row
    for r, _ in cells:
        if r.owner == row.owner:
            return r
    return row
