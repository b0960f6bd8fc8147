"""A class's text cut into chunks, one per statement of its body, so that its libcst tree can
be put together from trees of the chunks kept from earlier scans (`idxcheck.incremental.parse_store`).

A method edited in a large class leaves the other methods' text as it was: a pre-commit run
parses the edited method's chunk and takes the others' trees from the cache, where parsing
the whole class lay on the critical path of the run (bench/RESULTS.md, "What each change
did").

The tree put together must be the very tree libcst builds from the whole text, so a chunk
ends where libcst's ownership of the lines in between is plain: libcst gives the blank and
comment lines before a statement to that statement, but a comment indented deeper than the
next statement to the end of the block before it. A cut is made only where every line
between two statements is blank or a comment indented no deeper than the next statement;
elsewhere the statements stay in one chunk. Texts with tabs, carriage returns or form feeds
are not cut at all (indentation and line ends would then be read differently apart). The tree
put together was the whole text's tree for every class of three SGLang releases and of the
fixtures (`bench/RESULTS.md`); the tests compare the two for every class a scan of SGLang
0.5.23 reads and for the shapes of text where the ownership of lines is subtle."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

# Each chunk after the first is parsed as the body of a class of this header: its lines keep
# their indentation, so libcst reads them as it reads them in the whole class.
WRAPPER = "class _:\n"


def class_chunks(text: str, tree: ast.Module) -> list[str] | None:
    """The chunks of a class's text (`tree` is CPython's tree of it): the header with the first
    statement, then the later statements, each with the lines before it. None where the text
    is not one class cut at two places or more."""
    if any(c in text for c in "\t\r\f") or len(tree.body) != 1:
        return None
    cls = tree.body[0]
    if not isinstance(cls, ast.ClassDef) or len(cls.body) < 2:
        return None
    lines = text.split("\n")
    cuts: list[int] = []
    for before, after in itertools.pairwise(cls.body):
        last = before.end_lineno or before.lineno
        first = min([after.lineno, *(d.lineno for d in _decorators(after))])
        if first <= last or first - 1 >= len(lines):
            continue  # on one line (`a = 1; b = 2`)
        indent = after.col_offset
        if _indent(lines[first - 1]) != indent or lines[last - 1].endswith("\\"):
            continue
        between = lines[last : first - 1]
        if all(_owned_by_next(line, indent) for line in between):
            cuts.append(last)
    if not cuts:
        return None
    bounds = [0, *cuts, len(lines)]
    pieces = ["\n".join(lines[a:b]) for a, b in itertools.pairwise(bounds)]
    # `split` dropped the line ends at the cuts: each piece but the last ends with its own.
    chunks = [piece + "\n" for piece in pieces[:-1]] + [pieces[-1]]
    return chunks if "".join(chunks) == text else None


def _decorators(stmt: ast.stmt) -> Sequence[ast.expr]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.decorator_list
    return ()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _owned_by_next(line: str, indent: int) -> bool:
    """Whether libcst gives a line between two statements to the second: a blank line, or a
    comment indented no deeper than it."""
    stripped = line.strip(" ")
    return not stripped or (stripped.startswith("#") and _indent(line) <= indent)


def chunk_text(index: int, chunk: str) -> str:
    """The text parsed for a chunk: the first as it is, the others in a class."""
    return chunk if index == 0 else WRAPPER + chunk


def assembled(modules: Sequence[cst.Module]) -> cst.Module:
    """The whole class's module from its chunks' modules (parsed from `chunk_text`): the first
    chunk's class with every chunk's statements, and the last chunk's trailing lines."""
    head, last = modules[0], modules[-1]
    first_class, last_class = head.body[0], last.body[0]
    if not isinstance(first_class, cst.ClassDef) or not isinstance(last_class, cst.ClassDef):
        raise ValueError("a chunk is not a class")
    body: list[cst.BaseStatement] = []
    for module in modules:
        cls = module.body[0]
        if len(module.body) != 1 or not isinstance(cls, cst.ClassDef):
            raise ValueError("a chunk is not one class")
        if not isinstance(cls.body, cst.IndentedBlock):
            raise ValueError("a chunk's class has no indented body")
        body.extend(cls.body.body)
    if not isinstance(first_class.body, cst.IndentedBlock):
        raise ValueError("the class has no indented body")
    if not isinstance(last_class.body, cst.IndentedBlock):
        raise ValueError("the last chunk's class has no indented body")
    whole = first_class.with_changes(
        body=first_class.body.with_changes(body=tuple(body), footer=last_class.body.footer)
    )
    return head.with_changes(
        body=(whole,), footer=last.footer, has_trailing_newline=last.has_trailing_newline
    )
