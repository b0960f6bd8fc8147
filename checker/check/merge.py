"""The parts of every file merged into one scan result."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from idxcheck.check.analyse import FilePart
from idxcheck.model.findings import Finding, Related, ScanResult, SiteNote
from idxcheck.model.spans import Span

PART_COUNTS = ("obligations", "proved", "refuted", "unknown", "unsupported", "unreachable")


def merge_parts(parts: Iterable[FilePart], result: ScanResult) -> None:
    stats = result.stats
    notes: dict[tuple[str, Span, str], SiteNote] = {}
    by_key: dict[tuple[str, str, Span], Finding] = {}
    sites: set[Span] = set()
    for part in parts:
        stats.parsed += part.parsed
        sites |= part.sites
        for name in PART_COUNTS:
            setattr(stats, name, getattr(stats, name) + getattr(part.stats, name))
        result.errors.extend(part.errors)
        result.outcomes.extend(part.outcomes)
        for note in part.notes:
            notes.setdefault((note.code, note.span, note.mode), note)
        for finding, use, name, mode_independent in part.findings:
            key = (finding.code, "" if mode_independent else finding.mode, finding.span)
            first = by_key.get(key)
            if first is None:
                by_key[key] = finding
                continue
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
    stats.sites = len(sites)
    result.findings.extend(by_key.values())
    result.notes.extend(notes.values())
