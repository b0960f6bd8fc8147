"""Positions of a function's nodes from the statement that holds them.

libcst places nodes by generating the code of the whole tree it is given: for a long method
whose report needs the places of a few nodes, that generation costs more than interpreting the
method. CPython's parser gives every statement its line and column far more cheaply than libcst
parses (bench/RESULTS.md, "Where a cold scan's time goes"), so each statement of a function is
placed by it, and only the statements that hold a node whose place is asked for are generated
(a compound statement's header alone, without its body). Where the two trees do not line up
statement for statement, or a node is not in a statement placed this way, None tells the caller
to place it from the whole function."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from idxcheck.model.spans import Span
from idxcheck.source.cstwalk import descendants
from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


@dataclass
class Anchor:
    """A statement (or a compound statement's header) placed in the file by CPython's parser.

    It is generated indented as in its function (inside a stand-in `if`), so that every column
    comes out as the whole function's generation gives it, continuation lines and the lines
    of a string that spans several included."""

    code: cst.CSTNode  # what is generated: the stand-in holding `statement`
    statement: cst.CSTNode  # the statement, or the compound statement's header alone
    line: int  # the file line of its first token
    column: int  # the function's column: generated columns are relative to it
    shift: int  # columns its generated first line lacks: 2 for an `elif` generated as `if`
    positions: dict[cst.CSTNode, object] | None = None
    # The code the positions were generated from, split into lines (None: not kept).
    generated: list[str] | None = None
    # Per generated line after the first: what to add to its columns to get the file's, or
    # None where the generated line is not the file's line. A continuation line is generated
    # indented like its statement when it is (inside brackets, past the statement's column),
    # and as written otherwise (a line of a string, one after a backslash, one left of its
    # block): the file's line says which.
    offsets: dict[int, int | None] | None = None


Anchors = dict[int, Anchor]  # by id of each node under a placed statement


def statement_anchors(
    fn: cst.FunctionDef,
    placed: ast.FunctionDef | ast.AsyncFunctionDef,
    base: int,
    indent: int,
) -> Anchors | None:
    """The anchors of `fn`'s nodes from CPython's node of the same function (`placed`, whose
    line numbers count from file line `base` + 1; `indent`: the function's column); None when
    the two are not the same function statement for statement."""
    if placed.name != fn.name.value or not isinstance(fn.body, cst.IndentedBlock):
        return None
    anchors: Anchors = {}
    if not _pair(fn.body.body, placed.body, anchors, (base, indent)):
        return None
    return anchors


def anchored_span(
    anchors: Anchors, node: cst.CSTNode, path: str, lines: Sequence[str]
) -> Span | None:
    anchor = anchors.get(id(node))
    if anchor is None:
        return None
    if anchor.positions is None:
        try:
            anchor.positions, code = _positions_and_code(cst.Module(body=[anchor.code]))  # type: ignore[list-item]
        except (RecursionError, KeyError):
            anchor.positions, code = {}, None
        anchor.generated = code.split("\n") if code is not None else None
    pos = anchor.positions.get(node)
    ref = anchor.positions.get(anchor.statement)
    if pos is None or ref is None:
        return None
    first = ref.start.line  # type: ignore[attr-defined]
    start, end = pos.start, pos.end  # type: ignore[attr-defined]
    offsets: dict[int, int | None] = {first: anchor.column + anchor.shift}
    if end.line > first:
        if anchor.offsets is None:
            anchor.offsets = _line_offsets(anchor, first, ref.end.line, lines)  # type: ignore[attr-defined]
        offsets.update(anchor.offsets)
    start_offset, end_offset = offsets.get(start.line), offsets.get(end.line)
    if start_offset is None or end_offset is None:
        return None
    return Span(
        path,
        anchor.line + start.line - first,
        start.column + start_offset,
        anchor.line + end.line - first,
        end.column + end_offset,
    )


def generated_positions(module: cst.Module) -> dict[cst.CSTNode, object]:
    """The place of each node of `module` as libcst's `PositionProvider` gives it, from the
    provider's own code generation, without `MetadataWrapper`: for a module of one statement
    the wrapper's set-up costs almost as much again (bench/RESULTS.md, "What each change did",
    and "Measurements that stood in code comments"). Through the wrapper where this libcst's
    provider lacks those parts (tests compare the two)."""
    from libcst.metadata import PositionProvider

    provider = PositionProvider()
    generate = getattr(provider, "_gen_impl", None)
    computed = getattr(provider, "_computed", None)
    if generate is None or not isinstance(computed, dict):
        return _wrapped_positions(module)
    generate(module)
    return dict(computed)


def _positions_and_code(module: cst.Module) -> tuple[dict[cst.CSTNode, object], str | None]:
    """`generated_positions` and the code generated to find them (`module.code`: the same
    tokens), which a statement of several lines compares with the file's lines: one
    generation where `_line_offsets` made a second (bench/RESULTS.md, "What each change did",
    and "Measurements that stood in code comments"). Without the code where this libcst's
    provider lacks the parts used."""
    from libcst.metadata import PositionProvider

    try:
        from libcst.metadata.position_provider import PositionProvidingCodegenState
    except ImportError:
        return generated_positions(module), None
    provider = PositionProvider()
    computed = getattr(provider, "_computed", None)
    if not isinstance(computed, dict):
        return generated_positions(module), None
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=provider,
    )
    module._codegen(state)
    return dict(computed), "".join(state.tokens)


def _wrapped_positions(module: cst.Module) -> dict[cst.CSTNode, object]:
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return dict(wrapper.resolve(PositionProvider))


def _line_offsets(
    anchor: Anchor, first: int, last: int, lines: Sequence[str]
) -> dict[int, int | None]:
    generated = anchor.generated
    if generated is None:
        generated = cst.Module(body=[anchor.code]).code.split("\n")  # type: ignore[list-item]
    offsets: dict[int, int | None] = {}
    for number in range(first + 1, last + 1):
        index = anchor.line + number - first - 1
        if number > len(generated) or index >= len(lines):
            offsets[number] = None
            continue
        made, written = generated[number - 1], lines[index].rstrip("\r\n")
        if _same_line(written[anchor.column :], made) and not written[: anchor.column].strip():
            offsets[number] = anchor.column
        elif _same_line(written, made):
            offsets[number] = 0
        else:
            offsets[number] = None
    return offsets


def _same_line(written: str, made: str) -> bool:
    """The same line but for the characters of its indentation: the generation indents with
    spaces where the file may have tabs, one column each."""
    code = written.lstrip(" \t")
    return code == made.lstrip(" \t") and len(written) == len(made)


Place = tuple[int, int]  # the file line of the parsed text's line 0, the function's column


def _anchor(
    anchors: Anchors,
    statement: cst.BaseStatement,
    parts: Sequence[cst.CSTNode],
    placed: ast.stmt,
    place: Place,
    shift: int = 0,
) -> bool:
    base, column = place
    relative = placed.col_offset - column  # the statement's indentation within its function
    if relative <= 0:
        return False
    code = cst.If(
        test=cst.Name("_"), body=cst.IndentedBlock(body=[statement], indent=" " * relative)
    )
    anchor = Anchor(code, statement, base + placed.lineno, column, shift)
    for part in parts:
        for node in descendants(part):
            anchors[id(node)] = anchor
    return True


def _header(stmt: cst.BaseCompoundStatement) -> cst.BaseCompoundStatement:
    """A compound statement without its body and else-branch: the nodes of its header keep
    their identity, and generating it costs what its first line does."""
    changes: dict[str, object] = {"body": cst.IndentedBlock(body=[])}
    if hasattr(stmt, "orelse"):
        changes["orelse"] = None
    return stmt.with_changes(**changes)


def _pair(
    statements: Sequence[cst.BaseStatement],
    placed: Sequence[ast.stmt],
    anchors: Anchors,
    place: Place,
) -> bool:
    """Anchor `statements` to CPython's `placed` statements of the same block; False when the
    two do not line up."""
    index = 0
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            count = len(stmt.body)  # `a = 1; b = 2` is one line and two statements
            if count == 0 or index + count > len(placed):
                return False
            if not _anchor(anchors, stmt, [stmt], placed[index], place):
                return False
            index += count
            continue
        if index >= len(placed):
            return False
        if not _pair_compound(stmt, placed[index], anchors, place):
            return False
        index += 1
    return index == len(placed)


def _pair_body(
    body: cst.BaseSuite, placed: Sequence[ast.stmt], anchors: Anchors, place: Place
) -> bool:
    if isinstance(body, cst.IndentedBlock):
        return _pair(body.body, placed, anchors, place)
    return True  # a body on the header's line (`if x: return y`): its nodes are not anchored


def _pair_else(
    orelse: cst.Else | None, placed: Sequence[ast.stmt], anchors: Anchors, place: Place
) -> bool:
    if orelse is None:
        return not placed
    return _pair_body(orelse.body, placed, anchors, place)


def _pair_compound(
    stmt: cst.BaseStatement, placed: ast.stmt, anchors: Anchors, place: Place, elif_: bool = False
) -> bool:
    if isinstance(stmt, cst.If):
        # An `elif` chain in a loop, not by recursion: a valid chain can be thousands long.
        branch: cst.If = stmt
        while True:
            if not isinstance(placed, ast.If):
                return False
            header = _header(branch)
            if not _anchor(anchors, header, [branch.test], placed, place, 2 if elif_ else 0):
                return False
            if not _pair_body(branch.body, placed.body, anchors, place):
                return False
            if not isinstance(branch.orelse, cst.If):
                return _pair_else(branch.orelse, placed.orelse, anchors, place)
            if len(placed.orelse) != 1:
                return False
            branch, placed, elif_ = branch.orelse, placed.orelse[0], True
    if isinstance(stmt, cst.For):
        if not isinstance(placed, (ast.For, ast.AsyncFor)):
            return False
        if not _anchor(anchors, _header(stmt), [stmt.target, stmt.iter], placed, place):
            return False
        return _pair_body(stmt.body, placed.body, anchors, place) and _pair_else(
            stmt.orelse, placed.orelse, anchors, place
        )
    if isinstance(stmt, cst.While):
        if not isinstance(placed, ast.While):
            return False
        if not _anchor(anchors, _header(stmt), [stmt.test], placed, place):
            return False
        return _pair_body(stmt.body, placed.body, anchors, place) and _pair_else(
            stmt.orelse, placed.orelse, anchors, place
        )
    if isinstance(stmt, cst.With):
        if not isinstance(placed, (ast.With, ast.AsyncWith)):
            return False
        if not _anchor(anchors, _header(stmt), list(stmt.items), placed, place):
            return False
        return _pair_body(stmt.body, placed.body, anchors, place)
    if isinstance(stmt, cst.Try):
        if not isinstance(placed, ast.Try) or len(stmt.handlers) != len(placed.handlers):
            return False
        if not _pair_body(stmt.body, placed.body, anchors, place):
            return False
        for handler, placed_handler in zip(stmt.handlers, placed.handlers, strict=True):
            if not _pair_body(handler.body, placed_handler.body, anchors, place):
                return False
        finalbody = placed.finalbody
        if stmt.finalbody is None:
            if finalbody:
                return False
        elif not _pair_body(stmt.finalbody.body, finalbody, anchors, place):
            return False
        return _pair_else(stmt.orelse, placed.orelse, anchors, place)
    # Statements whose nodes are left to the whole function's positions.
    kinds: dict[type[cst.CSTNode], tuple[type[ast.stmt], ...]] = {
        cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
        cst.ClassDef: (ast.ClassDef,),
        cst.Match: (ast.Match,),
        cst.TryStar: (ast.TryStar,),
    }
    expected = kinds.get(type(stmt))
    return expected is not None and isinstance(placed, expected)
