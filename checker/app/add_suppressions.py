"""`idxcheck scan --add-suppressions`: a coded `# idxcheck: ignore[CODE]` comment written for each
finding reported today (as ruff's `--add-noqa` writes `# noqa: CODE`), so that a project adopts
idxcheck with its current findings marked where they stand, and only new ones fail.

A comment goes at the end of the finding's line, where a suppression comment matches it
(`source.comments`); where that line ends inside a string or with a backslash, at the end of
the first line of its statement, which matches too. A line that already has a suppression
comment gets the code added to it. A file is rewritten only when it still holds the text the
scan analysed, byte for byte in UTF-8 with its own line ends; otherwise its findings are left
as they are and said why."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from idxcheck.model.findings import Finding
from idxcheck.source.comments import read_comments
from idxcheck.source.files import readable_text

# The head of a line suppression comment: its codes' brackets, if any, follow it.
_HEAD = re.compile(r"idxcheck:\s*ignore(?![\w-])(?P<codes>\[[^\]]*\])?", re.IGNORECASE)
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Added:
    """What `add_suppressions` wrote: the findings now suppressed, the files changed, and the
    findings it could not mark, each with the reason."""

    suppressed: int
    files: tuple[str, ...]
    skipped: tuple[tuple[Finding, str], ...]


def add_suppressions(
    findings: Iterable[Finding], texts: Mapping[str, str], meta_codes: frozenset[str]
) -> Added:
    """A comment for each of `findings` but those of `meta_codes` (the rules about comments,
    which a comment would not silence), in the files whose text is still `texts[path]`."""
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.code not in meta_codes:
            by_path.setdefault(finding.span.path, []).append(finding)
    suppressed = 0
    files: list[str] = []
    skipped: list[tuple[Finding, str]] = []
    for path, found in sorted(by_path.items()):
        done, left = _add_to_file(path, found, texts.get(path))
        skipped.extend(left)
        if done:
            suppressed += done
            files.append(path)
    return Added(suppressed, tuple(files), tuple(skipped))


def _add_to_file(
    path: str, findings: list[Finding], analysed: str | None
) -> tuple[int, list[tuple[Finding, str]]]:
    """The findings of `path` marked: how many, and those left with the reason."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return 0, [(f, f"cannot read the file: {exc.strerror or exc}") for f in findings]
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        raw = data[len(bom) :].decode("utf-8")
    except UnicodeDecodeError:
        return 0, [(f, "the file is not UTF-8: not rewritten") for f in findings]
    if analysed is None or readable_text(data) != analysed:
        return 0, [(f, "the file changed since the scan read it") for f in findings]
    lines = _lines(raw)
    comments = read_comments(path, analysed)
    blocked, starts = _layout(analysed)
    codes: dict[int, set[str]] = {}
    left: list[tuple[Finding, str]] = []
    for finding in findings:
        line = finding.span.line
        start = starts.get(line, line)
        target = next((n for n in (line, start) if n not in blocked and n <= len(lines)), None)
        if target is None:
            left.append((finding, "its line ends inside a string or with a backslash"))
            continue
        codes.setdefault(target, set()).add(finding.code)
    if not codes:
        return 0, left
    existing = {s.line: s for s in comments.line_level}
    for number, found in codes.items():
        text, end = _split_end(lines[number - 1])
        comment = existing.get(number)
        lines[number - 1] = _with_codes(text, comment.column if comment else None, found) + end
    with open(path, "wb") as handle:
        handle.write(bom + "".join(lines).encode("utf-8"))
    return len(findings) - len(left), left


def _lines(text: str) -> list[str]:
    """The lines of `text` as CPython numbers them, each with its own line end."""
    out: list[str] = []
    start = 0
    for match in _LINE_END.finditer(text):
        out.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _split_end(line: str) -> tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


def _with_codes(text: str, column: int | None, codes: set[str]) -> str:
    """`text` (a line without its end) with a suppression comment of `codes`: the comment at
    `column` given those codes too, else a new one at the end."""
    if column is not None:
        match = _HEAD.match(text, column)
        if match is not None:
            named = match.group("codes")
            have = [c for c in re.split(r"[\s,]+", (named or "[]")[1:-1]) if c]
            named_already = {c.upper() for c in have}
            merged = [*have, *sorted(c for c in codes if c not in named_already)]
            at = match.start("codes") if named else match.end()
            return f"{text[:at]}[{', '.join(merged)}]{text[match.end() :]}"
    return text.rstrip(" \t") + f"  # idxcheck: ignore[{', '.join(sorted(codes))}]"


def _layout(text: str) -> tuple[set[int], dict[int, int]]:
    """The lines whose end is inside a token (a string over several lines) or a backslash
    continuation, where a comment added would change the code (every line where the text
    does not tokenize), and the first line of each line's statement."""
    blocked: set[int] = set()
    starts: dict[int, int] = {}
    try:
        current: int | None = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                blocked.update(range(tok.start[0], tok.end[0]))
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                continue
            if current is None:
                current = tok.start[0]
            if tok.type == tokenize.NEWLINE:
                starts.update((number, current) for number in range(current, tok.end[0] + 1))
                current = None
    except (tokenize.TokenError, SyntaxError):
        return set(range(1, text.count("\n") + 2)), {}
    for number, line in enumerate(text.split("\n"), start=1):
        if line.rstrip(" \t\f").endswith("\\"):
            blocked.add(number)
    return blocked, starts
