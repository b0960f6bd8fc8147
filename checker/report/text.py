"""The text report: `path:line:col: CODE message`, the counterexample, a code frame with a
caret under the expression to fix (ruff/rustc style), what the finding rests on, and a summary.
Colour only when asked (the CLI asks when stdout is a terminal); `--statistics` replaces the
list with a table of findings per rule and forward mode.

What comes from the scanned tree is shown escaped (`escape.display`): no control character
reaches the terminal or a CI log, and no line opens with a log command (`escape.line_start`, on
the text that opens each line)."""

from __future__ import annotations

from collections import Counter

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.model.verdicts import Verdict
from idxcheck.report.context import Report, SourceCache, as_report, finding_origins, plural
from idxcheck.report.detail import fix_line, launch_lines
from idxcheck.report.escape import display, line_start
from idxcheck.report.frames import frame


class Style:
    """ANSI styling, or none. Kept to a few roles so that the plain output is the same text."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def severity(self, severity: str, text: str) -> str:
        return self._wrap("1;31" if severity == "error" else "1;33", text)

    def gutter(self, text: str) -> str:
        return self._wrap("1;34", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def good(self, text: str) -> str:
        return self._wrap("1;32", text)


def render_frame(finding: Finding, sources: SourceCache, style: Style) -> list[str]:
    found = frame(finding.span, sources)
    if found is None:
        return []
    width = len(str(found.number))
    pad = " " * width
    caret = " " * found.start + "^" * (found.end - found.start)
    return [
        style.gutter(f"{pad} |"),
        style.gutter(f"{found.number} |") + (f" {found.text}" if found.text else ""),
        style.gutter(f"{pad} |") + " " + style.severity(finding.severity, caret),
        style.gutter(f"{pad} |"),
    ]


def render_finding(
    finding: Finding,
    explain: bool = False,
    *,
    sources: SourceCache | None = None,
    style: Style | None = None,
    suffix: str = "",
) -> str:
    style = style or Style(False)
    span = finding.span
    header = (
        style.bold(line_start(f"{span.path}:{span.line}:{span.column + 1}:"))
        + " "
        + style.severity(finding.severity, finding.code)
        + f" {display(finding.message)}{suffix}"
    )
    lines = [header]
    details = []
    if finding.needs_text:
        details.append(f"needs {display(finding.needs_text)}")
    for text, value in finding.conditions:
        details.append(f"with `{display(text)}` {'true' if value else 'false'}")
    if finding.counterexample_text or details:
        cex = f"  counterexample: {display(finding.counterexample_text)}"
        if details:
            cex += f" ({'; '.join(details)})"
        lines.append(cex)
    lines.extend(f"  {display(line)}" for line in launch_lines(finding))
    if finding.fix is not None:
        lines.append(f"  {display(fix_line(finding))}")
    if sources is not None:
        lines.extend(render_frame(finding, sources, style))
    for related in finding.related:
        if related.span:
            where = line_start(f"{related.span.path}:{related.span.line}: ")
            lines.append(f"  {style.dim(where)}{display(related.message)}")
        else:
            lines.append(f"  {line_start(related.message)}")
    if explain:
        lines.extend(f"  explain: {display(line)}" for line in finding.explain)
    if finding.confirmation:
        c = finding.confirmation
        status = display(str(c.get("status")))
        label = style.severity("error", status) if status == "confirmed" else style.bold(status)
        lines.append(f"  confirmation: {label}: {display(str(c.get('reason', '')))}")
    return "\n".join(lines)


def statistics_table(findings: list[Finding]) -> list[str]:
    """Findings per rule (rows) and forward mode (columns)."""
    if not findings:
        return []
    modes = sorted({display(f.mode or "-") for f in findings})
    counts = Counter((f.code, display(f.mode or "-")) for f in findings)
    names = {f.code: f.name for f in findings}
    header = ["code", "name", *modes, "total"]
    rows = [
        [
            code,
            names[code],
            *(str(counts[(code, m)]) for m in modes),
            str(sum(counts[(code, m)] for m in modes)),
        ]
        for code in sorted(names)
    ]
    totals = [
        "",
        "total",
        *(str(sum(counts[(c, m)] for c in names)) for m in modes),
        str(len(findings)),
    ]
    table = [header, *rows, totals]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in table
    ]


def render(
    result: ScanResult | Report,
    explain: bool = False,
    strict: bool = False,
    *,
    color: bool = False,
    statistics: bool = False,
    frames: bool = True,
    quiet: bool = False,
    show_unsupported: bool = False,
) -> str:
    """The report. `quiet`: the findings (and per-file errors) only, without the notes and
    the summary; `show_unsupported`: each UNSUPPORTED site with its reason, after them."""
    report = as_report(result)
    style = Style(color)
    sources = report.sources if frames else None
    out: list[str] = []
    if statistics:
        out.extend(statistics_table(report.findings))
    else:
        out.extend(
            render_finding(f, explain, sources=sources, style=style) for f in report.findings
        )
    out.extend(
        tail_lines(report, style, strict=strict, quiet=quiet, show_unsupported=show_unsupported)
    )
    return "".join(line + "\n" for line in out)


def tail_lines(
    report: Report,
    style: Style,
    *,
    strict: bool = False,
    quiet: bool = False,
    show_unsupported: bool = False,
) -> list[str]:
    """What follows the findings in the text reports: UNKNOWN sites under --strict, per-file
    errors, the UNSUPPORTED sites when asked, the notes and the summary (the last two not
    when `quiet`)."""
    out: list[str] = []
    if strict or report.strict:
        for path, line, column, code, mode, reason in report.unknown_notes():
            out.append(
                f"{line_start(f'{path}:{line}:{column + 1}:')} {code} UNKNOWN in {display(mode)}: "
                f"{display(reason)}"
            )
    for error in report.result.errors:
        out.append(
            f"{line_start(error.path + ':')} {style.severity('error', 'error')}: "
            f"{display(error.message)}"
        )
    if show_unsupported:
        out.extend(unsupported_lines(report, style))
    if not quiet:
        out.extend(style.dim(line) for line in note_lines(report))
        out.append(summary_line(report, style))
    return out


def unsupported_lines(report: Report, style: Style) -> list[str]:
    """Each UNSUPPORTED site once per rule and reason, with the forward modes it is in."""
    modes: dict[tuple[str, int, int, str, str], list[str]] = {}
    for note in report.result.notes:
        if note.verdict != Verdict.UNSUPPORTED:
            continue
        key = (note.span.path, note.span.line, note.span.column, note.code, note.reason)
        found = modes.setdefault(key, [])
        if note.mode not in found:
            found.append(note.mode)
    order = {mode: index for index, mode in enumerate(report.mode_order)}
    out = []
    for (path, line, column, code, reason), found in sorted(modes.items()):
        found.sort(key=lambda m: (order.get(m, len(order)), m))
        where = f" in {display(', '.join(found))}" if any(found) else ""
        out.append(
            f"{style.bold(line_start(f'{path}:{line}:{column + 1}:'))} {code} "
            f"{style.bold('unsupported')}{where}: {display(reason)}"
        )
    return out


def note_lines(report: Report) -> list[str]:
    """What a reader must know to read the scan's verdicts right, once a scan: each mode
    compared with the profile's default width, for want of its runner among the scanned
    files (scanning one backend alone, its obligations rest on the profile's assumption)."""
    widths: dict[tuple[str, str], list[str]] = {}
    for use in report.result.profile_widths:
        widths.setdefault((use.profile, use.mode), []).append(f"`{display(use.width)}`")
    return [
        f"note: no runner for {display(mode)} among the scanned files: compared with the "
        f"{display(profile)} profile's default {'width' if len(found) == 1 else 'widths'} "
        f"{', '.join(found)} (scan the tree that holds its runner to use the runner's own)"
        for (profile, mode), found in widths.items()
    ]


def summary_line(report: Report, style: Style | None = None) -> str:
    """One line that adds up: the obligations by verdict (they sum to the obligations), the
    findings the refuted ones make, and what the reporting policy took out of those and added
    (findings about comments), which leaves the findings reported."""
    from idxcheck.rules.meta import advisory_codes

    style = style or Style(False)
    stats = report.result.stats
    count = len(report.findings)
    from_refuted, about_comments = finding_origins(report)
    advisory = 0 if report.strict else sum(f.code in advisory_codes() for f in report.findings)
    refuted = f"{stats.refuted} refuted"
    if stats.refuted or from_refuted:
        refuted += f" in {plural(from_refuted, 'finding')}"
    extra = [
        f"{len(report.suppressed)} suppressed" if report.suppressed else "",
        f"{len(report.baselined)} baselined" if report.baselined else "",
        f"{len(report.ignored)} ignored by per-file-ignores" if report.ignored else "",
        f"{len(report.elsewhere)} outside the changed files" if report.elsewhere else "",
        f"{plural(about_comments, 'finding')} about suppression comments"
        + (f" ({advisory} not failing the run)" if advisory else "")
        if about_comments
        else "",
        plural(len(report.result.errors), "error") if report.result.errors else "",
        f"{report.stale_baseline} baseline entries matched nothing"
        if report.stale_baseline
        else "",
    ]
    headline = f"Found {plural(count, 'finding')}" if count else "No findings"
    if report.baseline_used and count:
        headline = f"Found {plural(count, 'new finding')}"
    shown = [e for e in extra if e]
    summary = (
        f"{headline}"
        f" ({plural(stats.files, 'file')}, {stats.parsed} parsed, {plural(stats.sites, 'site')}; "
        f"{plural(stats.obligations, 'obligation')}: {stats.proved} proved, {refuted}, "
        f"{stats.unknown} unknown, {stats.unsupported} unsupported, "
        f"{stats.unreachable} unreachable"
        f"{'; ' + ', '.join(shown) if shown else ''}) "
        f"in {stats.seconds:.2f}s"
    )
    failing = count > advisory or report.result.errors
    return style.severity("error", summary) if failing else style.good(summary)
