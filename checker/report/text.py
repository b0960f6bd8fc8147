"""The text report: `path:line:col: CODE message`, then the counterexample and what it rests
on, one finding after another, and a summary line."""

from __future__ import annotations

from idxcheck.findings import Finding, ScanResult
from idxcheck.verdicts import Verdict


def render_finding(finding: Finding, explain: bool = False) -> str:
    span = finding.span
    lines = [f"{span.path}:{span.line}:{span.column + 1}: {finding.code} {finding.message}"]
    cex = f"  counterexample: {finding.counterexample_text}"
    details = []
    if finding.needs_text:
        details.append(f"needs {finding.needs_text}")
    for text, value in finding.conditions:
        details.append(f"with `{text}` {'true' if value else 'false'}")
    if details:
        cex += f" ({'; '.join(details)})"
    lines.append(cex)
    for related in finding.related:
        where = f"{related.span.path}:{related.span.line}: " if related.span else ""
        lines.append(f"  {where}{related.message}")
    if explain:
        lines.extend(f"  explain: {line}" for line in finding.explain)
    if finding.confirmation:
        c = finding.confirmation
        lines.append(f"  confirmation: {c.get('status')}: {c.get('reason', '')}")
    return "\n".join(lines)


def render(result: ScanResult, explain: bool = False, strict: bool = False) -> str:
    out: list[str] = [render_finding(f, explain) for f in result.findings]
    if strict:
        for note in result.notes:
            if note.verdict == Verdict.UNKNOWN:
                out.append(
                    f"{note.span.path}:{note.span.line}:{note.span.column + 1}: {note.code} "
                    f"UNKNOWN in {note.mode}: {note.reason}"
                )
    for error in result.errors:
        out.append(f"{error.path}: error: {error.message}")
    stats = result.stats
    count = len(result.findings)
    summary = (
        f"{'Found ' + str(count) + ' finding' + ('s' if count != 1 else '') if count else 'No findings'}"
        f" ({stats.files} files, {stats.parsed} parsed, {stats.sites} sites, "
        f"{stats.obligations} obligations: {stats.proved} proved, {stats.refuted} refuted, "
        f"{stats.unknown} unknown, {stats.unsupported} unsupported"
        f"{', ' + str(len(result.errors)) + ' errors' if result.errors else ''}) "
        f"in {stats.seconds:.2f}s"
    )
    out.append(summary)
    return "\n".join(out) + "\n"
