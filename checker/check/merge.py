"""The parts of every file merged into one scan result."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from idxcheck.check.part import FilePart
from idxcheck.model.findings import FileError, Finding, Related, SiteNote
from idxcheck.model.kinds import Severity
from idxcheck.model.spans import Span

PART_COUNTS = ("obligations", "proved", "refuted", "unknown", "unsupported", "unreachable")


@dataclass(frozen=True)
class Merged:
    """Every file's part put together: one finding per place to fix, one note per site and
    mode, the counts summed."""

    findings: list[Finding]
    notes: list[SiteNote]
    outcomes: list[SiteNote]
    errors: list[FileError]
    counts: Counter[str]
    parsed: int
    sites: int
    defaults: set[tuple[str, str]]


def merge_parts(parts: Iterable[FilePart]) -> Merged:
    notes: dict[tuple[str, Span, str], SiteNote] = {}
    by_key: dict[tuple[str, str, Span], Finding] = {}
    sites: set[Span] = set()
    counts: Counter[str] = Counter()
    errors: list[FileError] = []
    outcomes: list[SiteNote] = []
    defaults: set[tuple[str, str]] = set()
    parsed = 0
    for part in parts:
        parsed += part.parsed
        defaults |= part.defaults
        sites |= part.sites
        counts.update(part.counts)
        errors.extend(part.errors)
        outcomes.extend(part.outcomes)
        for note in part.notes:
            notes.setdefault((note.code, note.span, note.mode), note)
        for finding, use, name, mode_independent in part.findings:
            key = (finding.code, "" if mode_independent else finding.mode, finding.span)
            first = by_key.get(key)
            if first is None:
                by_key[key] = finding
                continue
            if first.severity == Severity.NOTE and finding.severity != Severity.NOTE:
                # A class that reads the value (a subclass elsewhere) makes it a finding.
                by_key[key] = replace(finding, related=(*finding.related, *first.related))
                first = by_key[key]
            # One finding per place to fix; the other places that use the same value are
            # related.
            if (
                all(r.span is None or r.span.line != use.line for r in first.related)
                and use.line != first.span.line
            ):
                by_key[key] = replace(
                    first,
                    related=(
                        *first.related,
                        Related("binding", f"also used as `{name}` here", use),
                    ),
                )
    return Merged(
        list(by_key.values()),
        list(notes.values()),
        outcomes,
        errors,
        counts,
        parsed,
        len(sites),
        defaults,
    )
