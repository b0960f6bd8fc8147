"""Code frames: the source line of a span with a caret underline, as ruff and rustc print
them. Shared by the text, Markdown and HTML reports."""

from __future__ import annotations

from dataclasses import dataclass

from idxcheck.model.spans import Span
from idxcheck.report.context import SourceCache
from idxcheck.report.escape import display


@dataclass(frozen=True)
class Frame:
    number: int
    text: str  # the source line, tabs expanded, escaped for display (`escape.display`)
    start: int  # caret columns in `text`, [start, end)
    end: int


def frame(span: Span, sources: SourceCache) -> Frame | None:
    line = sources.line(span.path, span.line)
    if line is None:
        return None
    # Columns count characters; expand tabs on the way so that the caret lands under them,
    # and escape each part on its own so that it lands under the escaped text too.
    expanded = line.expandtabs(8)
    cut = len(line[: span.column].expandtabs(8))
    if span.end_line == span.line and span.end_column > span.column:
        stop = len(line[: span.end_column].expandtabs(8))
    else:
        stop = len(expanded)  # a span running past this line: underline to its end
    before = display(expanded[:cut])
    marked = display(expanded[cut:stop])
    text = (before + marked + display(expanded[stop:])).rstrip()
    start = len(before)
    end = max(start + 1, start + len(marked.rstrip()))
    return Frame(span.line, text, start, min(end, max(len(text), start + 1)))


def context_lines(
    span: Span, sources: SourceCache, before: int = 2, after: int = 1
) -> list[tuple[int, str]]:
    """The lines around `span`, tabs expanded (not escaped: the caller slices them by column)."""
    lines = sources.lines(span.path)
    if lines is None:
        return []
    first = max(1, span.line - before)
    last = min(len(lines), max(span.end_line, span.line) + after)
    return [(n, lines[n - 1].expandtabs(8).rstrip()) for n in range(first, last + 1)]
