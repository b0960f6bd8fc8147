"""Suppression comments: `# idxcheck: ignore[IDX001] reason`.

A comment suppresses the findings of the codes it names whose primary span starts on its line,
or whose statement starts on its line (a finding deep inside a multi-line call can be silenced
where the statement begins). A code is required: a bare `# idxcheck: ignore` would silence rules
that do not exist yet, so it suppresses nothing and is itself reported (IDX900), and a comment
that no longer suppresses anything is reported too (IDX901), so stale comments do not pile up.

A file-level comment, `# idxcheck: ignore-file[IDX001]` on a line of its own or after code
anywhere in the file, suppresses every finding of the codes it names in that file; a bare
`# idxcheck: ignore-file` every finding in the file (the file opted out, as by `exclude`,
but still scanned for the tree facts it holds). It is reported as unused (IDX901) when it
suppresses nothing.

Comments are read from the file text with the tokenizer (so `#` inside strings is not a comment),
only in files that contain the marker: no file is parsed again."""

from __future__ import annotations

import io
import re
import tokenize

from idxcheck.model.comments import FileComments, Suppression
from idxcheck.source.lines import cpython_newlines, split_lines

MARKER = "idxcheck:"


_COMMENT = re.compile(
    r"idxcheck:\s*ignore(?P<file>-file)?(?![\w-])(?:\[(?P<codes>[^\]]*)\])?(?P<reason>[^#]*)",
    re.IGNORECASE,
)


def read_comments(path: str, text: str) -> FileComments:
    """The suppression comments of one file (empty without the marker: the common case)."""
    if MARKER not in text.lower():
        return FileComments(path, ())
    text = cpython_newlines(text)  # the tokenizer's lines are then CPython's
    found: list[Suppression] = []
    starts: dict[int, int] = {}
    try:
        current: int | None = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.extend(_parse_comment(path, tok.string, tok.start[0], tok.start[1]))
                continue
            if tok.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if current is None:
                current = tok.start[0]
            if tok.type == tokenize.NEWLINE:
                for number in range(current, tok.end[0] + 1):
                    starts[number] = current
                current = None
    except (tokenize.TokenError, SyntaxError):
        # A file the tokenizer rejects (the scan reports it as an error): read comments line by
        # line so that they are still honoured where they stand.
        found = []
        starts = {}
        for number, line in enumerate(split_lines(text, keepends=False), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                found.extend(_parse_comment(path, line[hash_at:], number, hash_at))
    return FileComments(path, tuple(found), starts)


def _parse_comment(path: str, comment: str, line: int, column: int) -> list[Suppression]:
    out = []
    for match in _COMMENT.finditer(comment):
        raw = match.group("codes")
        codes = tuple(c.upper() for c in re.split(r"[\s,]+", raw or "") if c)
        out.append(
            Suppression(
                path=path,
                line=line,
                column=column + match.start(),
                end_column=column + match.end(),
                codes=codes,
                reason=match.group("reason").strip(),
                text=match.group(0).strip(),
                file_level=match.group("file") is not None,
            )
        )
    return out
