"""A finding's detail as plain lines (counterexample, related places, confirmation), for the
formats that carry one block of text per finding (GitHub annotations, JUnit failures)."""

from __future__ import annotations

from idxcheck.model.findings import Finding


def detail_lines(finding: Finding) -> list[str]:
    lines: list[str] = []
    if finding.counterexample_text:
        needs = f" (needs {finding.needs_text})" if finding.needs_text else ""
        lines.append(f"counterexample: {finding.counterexample_text}{needs}")
    for related in finding.related:
        where = f"{related.span.path}:{related.span.line}: " if related.span else ""
        lines.append(f"{where}{related.message}")
    if finding.confirmation:
        lines.append(
            f"confirmation: {finding.confirmation.get('status')}: "
            f"{finding.confirmation.get('reason', '')}"
        )
    return lines
