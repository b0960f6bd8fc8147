"""One self-contained HTML page (no scripts, no external files): the backend x forward-mode
matrix, each cell coloured by its worst verdict and linking to its findings, then every finding
with a code frame, its counterexample, the chain it rests on and, after `--confirm`, what the
runtime replay saw. Every text is escaped for HTML (`escape.html`), what comes from the scanned
tree shown escaped for display first."""

from __future__ import annotations

import posixpath

from idxcheck import __version__
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report import matrix
from idxcheck.report.context import Report, as_report, plural
from idxcheck.report.escape import html as escape
from idxcheck.report.frames import context_lines
from idxcheck.report.text import summary_line

_STYLE = """
:root { --proved:#d3f0dc; --proved-ink:#116329; --latent:#fff1c2; --latent-ink:#7a5200;
  --refuted:#ffd7d5; --refuted-ink:#a40e26; --unknown:#e8dcff; --unknown-ink:#5a32a3;
  --unsupported:#e4e8ee; --unsupported-ink:#424a53; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:#1f2328;
  margin: 0 auto; max-width: 1280px; padding: 24px; background:#fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; }
h3 { font-size: 15px; margin: 0 0 6px; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.summary { color:#59636e; margin: 0; }
/* The matrix fits the page: a fixed first column, the modes sharing the rest; past
   MATRIX_MIN_COLUMN per mode the page scrolls sideways under the sticky backend column. */
table.matrix { border-collapse: separate; border-spacing: 0; width: 100%; table-layout: fixed;
  border-top: 1px solid var(--line); border-left: 1px solid var(--line); }
.matrix th, .matrix td { border-right: 1px solid var(--line); border-bottom: 1px solid var(--line);
  padding: 5px 4px; text-align: center; overflow-wrap: anywhere; }
.matrix thead th { background:#f6f8fa; font-size: 11.5px; line-height: 1.25;
  vertical-align: bottom; position: sticky; top: 0; z-index: 2; }
.matrix th[scope=row] { text-align: left; font-weight: normal; line-height: 1.3;
  position: sticky; left: 0; z-index: 1; background:#fff; padding: 5px 8px; }
.matrix thead th:first-child { left: 0; z-index: 3; text-align: left; padding: 5px 8px; }
.matrix th[scope=row] b { display: block; font-size: 13px; }
.matrix th[scope=row] code { display: block; color:#59636e; font-size: 11.5px; }
.matrix th[scope=rowgroup] { text-align: left; background:#f6f8fa; padding: 3px 8px; }
.matrix th[scope=rowgroup] code { position: sticky; left: 8px; font-size: 12px; }
.matrix td { font-size: 11.5px; font-weight: 600; }
.matrix-note { color:#59636e; margin: 0 0 8px; }
.matrix td a { color: inherit; }
td.empty { color:#afb8c1; font-weight: normal; }
.proved { background: var(--proved); color: var(--proved-ink); }
.latent { background: var(--latent); color: var(--latent-ink); }
.refuted { background: var(--refuted); color: var(--refuted-ink); }
.unknown { background: var(--unknown); color: var(--unknown-ink); }
.unsupported { background: var(--unsupported); color: var(--unsupported-ink); }
.legend { display: flex; gap: 14px; margin: 10px 0 0;
  padding: 0; list-style: none; font-size: 12px; }
.legend li span { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
  vertical-align: -2px; margin-right: 4px; border: 1px solid var(--line); }
.finding { border: 1px solid var(--line); border-left: 6px solid var(--refuted-ink);
  border-radius: 6px; padding: 12px 16px; margin: 0 0 14px; }
.finding.sev-warning { border-left-color: var(--latent-ink); }
.finding:target { box-shadow: 0 0 0 3px #0969da55; }
.loc { color:#59636e; margin: 0 0 6px; }
.message { margin: 0 0 8px; }
pre.frame { background:#f6f8fa; border-radius: 6px;
  padding: 8px 0; margin: 8px 0; overflow-x: auto; }
pre.frame span.ln { display: inline-block; width: 4.5em; padding-right: 10px; text-align: right;
  color:#8c959f; user-select: none; }
pre.frame .hit { background:#fff8c5; display: inline-block; min-width: 100%; }
pre.frame mark { background: var(--refuted); color: var(--refuted-ink);
  border-bottom: 2px solid var(--refuted-ink); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 8px 0 0; }
dt { color:#59636e; } dd { margin: 0; }
.badge { display: inline-block; border-radius: 10px;
  padding: 0 8px; font-size: 11.5px; font-weight: 600; }
ul.plain { margin: 0; padding-left: 18px; }
summary { cursor: pointer; color:#59636e; }
footer { color:#8c959f; font-size: 12px; margin-top: 30px; }
"""


def _frame(finding: Finding, report: Report) -> str:
    lines = context_lines(finding.span, report.sources)
    if not lines:
        return ""
    span = finding.span
    out = []
    for number, text in lines:
        gutter = f'<span class="ln">{number}</span>'
        if number == span.line:
            end = (
                span.end_column
                if span.end_line == span.line and span.end_column > span.column
                else len(text)
            )
            marked = (
                escape(text[: span.column])
                + "<mark>"
                + escape(text[span.column : end])
                + "</mark>"
                + escape(text[end:])
            )
            out.append(f'<span class="hit">{gutter}{marked}</span>')
        else:
            out.append(f"{gutter}{escape(text)}")
    return '<pre class="frame">' + "\n".join(out) + "</pre>"


def _finding(index: int, finding: Finding, report: Report) -> str:
    kind = "refuted" if finding.severity == "error" else "latent"
    span = finding.span
    mode = f' <span class="badge {kind}">{escape(finding.mode)}</span>' if finding.mode else ""
    where = f"<code>{escape(span.path)}:{span.line}:{span.column + 1}</code>"
    if finding.function:
        where += f" in <code>{escape(finding.function)}</code>"
    rows = []
    if finding.counterexample_text:
        rows.append(("counterexample", f"<code>{escape(finding.counterexample_text)}</code>"))
    if finding.needs_text:
        rows.append(("needs", f"<code>{escape(finding.needs_text)}</code>"))
    for text, value in finding.conditions:
        rows.append(("with", f"<code>{escape(text)}</code> {'true' if value else 'false'}"))
    if finding.launch is not None:
        needs = [f"MODEL is {m}" for m in finding.launch.model] + list(finding.launch.runtime)
        rows.append(
            (
                "launch",
                f"<code>{escape(finding.launch.command)}</code>"
                + (f"<br>{escape('; '.join(needs))}" if needs else ""),
            )
        )
    if finding.fix is not None:
        rows.append(
            (
                "fix",
                f"replace <code>{escape(finding.fix.original)}</code> with "
                f"<code>{escape(finding.fix.replacement)}</code> "
                f"({escape(finding.fix.description)})",
            )
        )
    if finding.related:
        items = "".join(
            "<li>"
            + (f"<code>{escape(r.span.path)}:{r.span.line}</code> " if r.span else "")
            + escape(r.message)
            + "</li>"
            for r in finding.related
        )
        rows.append(("rests on", f'<ul class="plain">{items}</ul>'))
    if finding.explain:
        rows.append(
            (
                "explain",
                # Path conditions of real code run long: folded until asked for.
                '<details><summary>the chain, step by step</summary><ul class="plain">'
                + "".join(f"<li>{escape(e)}</li>" for e in finding.explain)
                + "</ul></details>",
            )
        )
    if finding.confirmation:
        c = finding.confirmation
        status = str(c.get("status"))
        badge = "refuted" if status == "confirmed" else "unsupported"
        rows.append(
            (
                "confirmation",
                f'<span class="badge {badge}">{escape(status)}</span> '
                + escape(str(c.get("reason", ""))),
            )
        )
    details = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in rows)
    return (
        f'<article class="finding sev-{escape(finding.severity)}" id="f-{index}">'
        f"<h3>{index}. {escape(finding.code)} {escape(finding.name)}{mode}</h3>"
        f'<p class="loc">{where}</p>'
        f'<p class="message">{escape(finding.message)}</p>'
        f"{_frame(finding, report)}"
        f"<dl>{details}</dl></article>"
    )


# Widths of the matrix's columns in CSS pixels: the backend column, and the least a mode's
# column gets before the page scrolls sideways (room for "unsupported" and a few links).
MATRIX_BACKEND_COLUMN = 280
MATRIX_MIN_COLUMN = 84


def row_groups(paths: list[str]) -> tuple[str, dict[str, tuple[str, str]]]:
    """The folder every row's file is in ("" where none), and each path as the matrix shows
    it: the folder below that one (a row group's header, "" for the common folder itself) and
    the file name (the row's)."""
    folders = [posixpath.dirname(p) for p in paths]
    try:
        common = posixpath.commonpath(folders) if folders else ""
    except ValueError:  # absolute and relative paths together
        common = ""
    shown = {}
    for path, folder in zip(paths, folders, strict=True):
        below = posixpath.relpath(folder, common) if common else folder
        shown[path] = ("" if below == "." else below, posixpath.basename(path))
    return common, shown


def _breakable(text: str, after: str) -> str:
    """Escaped text that may wrap after each `after` (a path's slashes, a mode's underscores)."""
    return f"{escape(after)}<wbr>".join(escape(part) for part in text.split(after))


def _row(grid: matrix.Matrix, row: matrix.Row, file_name: str) -> str:
    """A backend's row: the class, then its file; the full `path:Class` in data-row and title."""
    cells = []
    for mode in grid.modes:
        cell = grid.cells.get((row, mode))
        if cell is None:
            cells.append(
                '<td class="empty" data-verdict="none" '
                'title="no site checked in this mode">&middot;</td>'
            )
            continue
        counts = ", ".join(
            f"{n} {c}"
            for c, n in sorted(cell.counts.items(), key=lambda kv: matrix.CATEGORIES.index(kv[0]))
        )
        title = counts + (("; " + "; ".join(cell.reasons)) if cell.reasons else "")
        if cell.suppressed:
            title += f"; {cell.suppressed} suppressed"
        if cell.findings:
            links = " ".join(f'<a href="#f-{i + 1}">#{i + 1}</a>' for i in cell.findings)
            label = f"{cell.category}<br>{links}"
        else:
            label = cell.category
        cells.append(
            f'<td class="{cell.category}" data-verdict="{cell.category}" '
            f'title="{escape(title)}">{label}</td>'
        )
    return (
        f'<tr><th scope="row" data-row="{escape(row.label)}" title="{escape(row.label)}">'
        f"<b>{_breakable(row.owner, '_')}</b><code>{_breakable(file_name, '_')}</code></th>"
        + "".join(cells)
        + "</tr>"
    )


def _matrix(report: Report) -> str:
    grid = matrix.build(report)
    if not grid.rows:
        return '<p id="matrix-empty">No attention-backend sites in the scanned files.</p>'
    head = "".join(f'<th scope="col">{_breakable(m, "_")}</th>' for m in grid.modes)
    common, shown = row_groups(sorted({row.path for row in grid.rows}))
    groups: dict[str, list[str]] = {}
    for row in sorted(grid.rows, key=lambda r: (*shown[r.path], r.owner)):
        groups.setdefault(shown[row.path][0], []).append(_row(grid, row, shown[row.path][1]))
    body = []
    for folder, rows in groups.items():
        header = (
            f'<tr class="folder"><th scope="rowgroup" colspan="{len(grid.modes) + 1}">'
            f"<code>{_breakable(folder, '/')}/</code></th></tr>"
            if folder
            else ""
        )
        body.append("<tbody>" + header + "".join(rows) + "</tbody>")
    legend = "".join(f'<li><span class="{c}"></span>{c}</li>' for c in matrix.CATEGORIES)
    note = (
        f'<p class="matrix-note">Backends by class and file, paths below '
        f"<code>{escape(common)}/</code>.</p>"
        if common
        else ""
    )
    least = MATRIX_BACKEND_COLUMN + MATRIX_MIN_COLUMN * len(grid.modes)
    return (
        note
        + f'<table class="matrix" id="matrix" style="min-width: {least}px">'
        + f'<colgroup><col style="width: {MATRIX_BACKEND_COLUMN}px">'
        + f'<col span="{len(grid.modes)}"></colgroup>'
        + '<thead><tr><th scope="col">backend</th>'
        + head
        + "</tr></thead>"
        + "".join(body)
        + "</table>"
        + f'<ul class="legend">{legend}</ul>'
    )


def render(result: ScanResult | Report) -> str:
    report = as_report(result)
    # Notes (values nothing reads) fail nothing: counted apart from the findings, and the
    # summary is the text report's, whose counts add up (refuted obligations -> findings).
    notes = sum(1 for f in report.findings if f.severity == "note")
    count = len(report.findings) - notes
    title = plural(count, "finding") if count else "no findings"
    if notes:
        title += f", {plural(notes, 'note')}"
    summary = summary_line(report)
    findings = "".join(_finding(i, f, report) for i, f in enumerate(report.findings, start=1))
    errors = ""
    if report.result.errors:
        errors = (
            "<h2>Errors</h2><ul>"
            + "".join(
                f"<li><code>{escape(e.path)}</code>: {escape(e.message)}</li>"
                for e in report.result.errors
            )
            + "</ul>"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>idxcheck: {escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<header><h1>idxcheck: {escape(title)}</h1>"
        f'<p class="summary">{escape(summary)}. '
        f"Forward-mode model: {escape(report.result.mode_model_source or 'n/a')}.</p></header>\n"
        f"<section><h2>Backends &times; forward modes</h2>{_matrix(report)}</section>\n"
        f'<section id="findings"><h2>Findings</h2>{findings or "<p>None.</p>"}</section>\n'
        f"{errors}"
        f"<footer>idxcheck {escape(__version__)}</footer>\n"
        "</body></html>\n"
    )
