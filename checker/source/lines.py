"""Lines as CPython counts them: only "\\n", "\\r\\n" and "\\r" end a line. `str.splitlines`
also breaks at "\\v", "\\f", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, which CPython reads
as ordinary characters (in a comment or a string), so a file holding one would have its later
lines numbered one too far. Every text a scan reads has its line ends made "\\n" first
(`cpython_newlines`), as CPython's tokenizer does, so that counting "\\n" gives CPython's line
numbers everywhere: blocks, hit lines, suppressions, code frames and positions."""

from __future__ import annotations


def cpython_newlines(text: str) -> str:
    """`text` with each "\\r\\n" and lone "\\r" made "\\n" (CPython's universal newlines):
    the same lines, the same columns."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str, keepends: bool = True) -> list[str]:
    """The lines of `text` as CPython numbers them (line ends kept with `keepends`), where
    `str.splitlines` would break at other characters too."""
    parts = cpython_newlines(text).split("\n")
    last = parts.pop()  # what follows the last line end: a line without one, or nothing
    if keepends:
        parts = [part + "\n" for part in parts]
    if last:
        parts.append(last)
    return parts
