"""What every reporter renders: the scan result, what the reporting policy took out
(suppressed, baselined), the exit code the run ends with, and the source lines for code frames.

Reporters are pure functions of a `Report` (plus the files they quote), so a golden test can pin
each format exactly: nothing here reads the clock or the absolute working directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.model.verdicts import Verdict
from idxcheck.source.lines import split_lines

if TYPE_CHECKING:
    from idxcheck.model.comments import Suppression

EXIT_DESCRIPTIONS = {
    0: "clean: no findings but warnings about unused suppressions (or --exit-zero)",
    1: "findings, per-file errors, or (with --strict) UNKNOWN verdicts and unused suppressions",
    2: "usage or internal error",
}


class SourceCache:
    """Source lines of reported files, as CPython numbers them, once per file (None when
    unreadable): from `texts`, the texts the scan analysed (`api.Scan.texts`), else read from
    the file and decoded as the analysis decodes it."""

    def __init__(self, texts: Mapping[str, str] | None = None) -> None:
        self._texts = dict(texts or {})
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self._texts.get(path)
            if text is None:
                text = _read(path)
            self._lines[path] = None if text is None else split_lines(text, keepends=False)
        return self._lines[path]

    def line(self, path: str, number: int) -> str | None:
        lines = self.lines(path)
        if lines is None or not 1 <= number <= len(lines):
            return None
        return lines[number - 1]


def _read(path: str) -> str | None:
    from idxcheck.model.config import MAX_FILE_BYTES
    from idxcheck.source.files import readable_text

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):  # ValueError: a name no file can have (a NUL)
        return None
    return None if len(data) > MAX_FILE_BYTES else readable_text(data)


@dataclass(frozen=True)
class Report:
    result: ScanResult
    suppressed: tuple[tuple[Finding, Suppression], ...] = ()
    baselined: tuple[Finding, ...] = ()
    ignored: tuple[Finding, ...] = ()  # by per-file-ignores
    # By `--changed-only`: findings that touch none of the changed files.
    elsewhere: tuple[Finding, ...] = ()
    exit_code: int = 0
    strict: bool = False
    baseline_used: bool = False  # a baseline or diff base decided which findings are new
    stale_baseline: int = 0
    mode_order: tuple[str, ...] = ()  # column order of the backend x mode matrix
    docs_url: str = ""  # the docs folder's address (rule pages under rules/); "": none known
    sources: SourceCache = field(default_factory=SourceCache, compare=False, repr=False)

    @property
    def findings(self) -> list[Finding]:
        return self.result.findings

    def unknown_notes(self) -> list[tuple[str, int, int, str, str, str]]:
        """UNKNOWN sites (reported under --strict): (path, line, column, code, mode, reason)."""
        return [
            (n.span.path, n.span.line, n.span.column, n.code, n.mode, n.reason)
            for n in self.result.notes
            if n.verdict == Verdict.UNKNOWN
        ]


def as_report(result: ScanResult | Report) -> Report:
    return result if isinstance(result, Report) else Report(result)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary_counts(report: Report) -> Sequence[tuple[str, int]]:
    """The counts every format's summary shows, in one order."""
    stats = report.result.stats
    return (
        ("files", stats.files),
        ("parsed", stats.parsed),
        ("sites", stats.sites),
        ("obligations", stats.obligations),
        ("proved", stats.proved),
        ("refuted", stats.refuted),
        ("unknown", stats.unknown),
        ("unsupported", stats.unsupported),
        ("unreachable", stats.unreachable),
    )


def finding_origins(report: Report) -> tuple[int, int]:
    """(findings the refuted obligations make, findings about suppression comments), before
    the reporting policy took any out: one finding gathers the refuted obligations of one
    place to fix (its forward modes, runners and files), so that the first is at most the
    refuted count, and the reported findings are both less what the policy took out."""
    from idxcheck.rules.meta import META_RULES

    meta = frozenset(rule.code for rule in META_RULES)
    every = [
        *report.findings,
        *(finding for finding, _ in report.suppressed),
        *report.baselined,
        *report.ignored,
        *report.elsewhere,
    ]
    about_comments = sum(1 for finding in every if finding.code in meta)
    return len(every) - about_comments, about_comments
