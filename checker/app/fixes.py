"""`idxcheck scan --fix`: the replacements findings carry (`Finding.fix`), written into the
scanned files. Opt-in: a fix is an edit of code idxcheck never ran, to be reviewed like any
other. Each file is rewritten whole (a temporary file renamed over it) or not at all; a fix
whose text is no longer at its place (the file changed since the scan) or that overlaps
another is left out and said so."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from idxcheck.app.outfile import OutputError, write_text
from idxcheck.model.findings import Finding

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class Applied:
    """What `apply_fixes` did: fixes written per file, and the fixes left out, with why."""

    files: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(self.files.values())


def apply_fixes(findings: list[Finding]) -> Applied:
    applied = Applied()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.fix is not None:
            by_path.setdefault(finding.span.path, []).append(finding)
    for path, fixable in sorted(by_path.items()):
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            applied.skipped.append(f"{path}: cannot be read ({exc})")
            continue
        starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        edits: dict[tuple[int, int], str] = {}
        for finding in fixable:
            assert finding.fix is not None
            span = finding.span
            where = f"{path}:{span.line}:{span.column + 1}"
            if span.end_line > len(starts) or span.line < 1:
                applied.skipped.append(f"{where}: the file changed since the scan")
                continue
            begin = starts[span.line - 1] + span.column
            end = starts[span.end_line - 1] + span.end_column
            segment = text[begin:end]
            if segment.split() != finding.fix.original.split():
                applied.skipped.append(f"{where}: the file changed since the scan")
                continue
            new = finding.fix.applied(segment)
            if edits.get((begin, end), new) != new:
                applied.skipped.append(f"{where}: another fix rewrites this expression")
                continue
            if any(b < end and begin < e for b, e in edits if (b, e) != (begin, end)):
                applied.skipped.append(f"{where}: overlaps another fix")
                continue
            edits[(begin, end)] = new
        if not edits:
            continue
        for (begin, end), new in sorted(edits.items(), reverse=True):
            text = text[:begin] + new + text[end:]
        try:
            write_text(path, text)  # whole or not at all, through links, its mode kept
        except OutputError as exc:
            applied.skipped.append(str(exc))
            continue
        applied.files[path] = len(edits)
    return applied
