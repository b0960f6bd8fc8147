"""The Markdown report, for `$GITHUB_STEP_SUMMARY` (which holds every finding, where
annotations stop at 10) and for pasting into a review: a summary, a table of all findings,
then each finding with its code frame, counterexample and related locations.

What comes from the scanned tree is escaped for Markdown (`escape.md_code`, `md_text`): a
name or a piece of code is a code span whose fence no backtick in it can close, and prose can
open no HTML, link or autolink."""

from __future__ import annotations

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report.context import Report, as_report, plural, summary_counts
from idxcheck.report.escape import md_code, md_fence, md_text
from idxcheck.report.frames import frame


def _cell(text: str) -> str:
    return md_text(text, table=True)


def _anchor(index: int) -> str:
    return f"finding-{index}"


def _details(index: int, finding: Finding, report: Report) -> list[str]:
    span = finding.span
    title = f"{finding.code} {finding.name}" + (f" in {finding.mode}" if finding.mode else "")
    out = [
        f'<a id="{_anchor(index)}"></a>',
        f"### {index}. {md_text(title)}",
        "",
        md_code(f"{span.path}:{span.line}:{span.column + 1}"),
    ]
    if finding.function:
        out[-1] += f" in {md_code(finding.function)}"
    out += ["", md_text(finding.message, block=True), ""]
    found = frame(span, report.sources)
    if found is not None:
        width = len(str(found.number))
        out += md_fence(
            [
                f"{found.number} | {found.text}",
                f"{' ' * width} | {' ' * found.start}{'^' * (found.end - found.start)}",
            ],
            "text",
        )
        out.append("")
    if finding.counterexample_text:
        needs = f" (needs {md_text(finding.needs_text)})" if finding.needs_text else ""
        out += [f"- **counterexample:** {md_code(finding.counterexample_text)}{needs}"]
    for text, value in finding.conditions:
        out += [f"- **with** {md_code(text)} {'true' if value else 'false'}"]
    if finding.launch is not None:
        out += [f"- **launch:** {md_code(finding.launch.command)}"]
        wanted = [f"MODEL is {m}" for m in finding.launch.model] + list(finding.launch.runtime)
        if wanted:
            out += [f"- **launch needs:** {md_text('; '.join(wanted))}"]
    if finding.fix is not None:
        out += [
            f"- **fix:** replace {md_code(finding.fix.original)} with "
            f"{md_code(finding.fix.replacement)} ({md_text(finding.fix.description)})"
        ]
    for related in finding.related:
        where = f"{md_code(f'{related.span.path}:{related.span.line}')} " if related.span else ""
        out += [f"- **{md_text(related.role)}:** {where}{md_text(related.message)}"]
    if finding.confirmation:
        c = finding.confirmation
        status = md_text(str(c.get("status")))
        out += [f"- **confirmation:** {status}: {md_text(str(c.get('reason', '')))}"]
    out.append("")
    return out


def render(result: ScanResult | Report) -> str:
    report = as_report(result)
    findings = report.findings
    count = len(findings)
    heading = (
        plural(count, "new finding" if report.baseline_used else "finding")
        if count
        else "no findings"
    )
    out = [f"## idxcheck: {heading}", ""]
    counts = ", ".join(f"{value} {name}" for name, value in summary_counts(report))
    extras = []
    if report.suppressed:
        extras.append(f"{len(report.suppressed)} suppressed")
    if report.baselined:
        extras.append(f"{len(report.baselined)} baselined")
    if report.result.errors:
        extras.append(plural(len(report.result.errors), "error"))
    out += [counts + ("; " + ", ".join(extras) if extras else "") + ".", ""]
    if findings:
        out += [
            "| # | location | rule | mode | finding | counterexample |",
            "|---|---|---|---|---|---|",
        ]
        for index, finding in enumerate(findings, start=1):
            span = finding.span
            cex = md_text(finding.counterexample_text, table=True) or "-"
            out.append(
                f"| [{index}](#{_anchor(index)}) | {md_code(f'{span.path}:{span.line}', table=True)} "
                f"| {_cell(f'{finding.code} {finding.name}')} | {_cell(finding.mode or '-')} "
                f"| {_cell(finding.message)} | {cex} |"
            )
        out.append("")
        for index, finding in enumerate(findings, start=1):
            out += _details(index, finding, report)
    if report.result.errors:
        out += ["### Errors", ""]
        out += [f"- {md_code(e.path)}: {md_text(e.message)}" for e in report.result.errors]
        out.append("")
    if report.strict and report.unknown_notes():
        out += ["### Undecided (UNKNOWN)", ""]
        out += [
            f"- {md_code(f'{p}:{line}')} {md_text(code)} in {md_text(mode)}: {md_text(reason)}"
            for p, line, _c, code, mode, reason in report.unknown_notes()
        ]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
