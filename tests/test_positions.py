"""Nodes placed from the statement that holds them (CPython's line and column for the statement,
libcst's generation of that statement alone) get the span the generation of their whole
function gives: on every fixture, on statements of every kind, and on real backends."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from idxcheck.model.spans import Span
from idxcheck.source.cstwalk import descendants
from idxcheck.source.files import FunctionSource, SourceFile, locate_blocks
from idxcheck.source.lines import split_lines

from .realtree import sglang_tree

FIXTURES = Path("fixtures")
SOURCES = sorted(p for p in FIXTURES.rglob("*.py") if "bad" not in p.parts)
PLACED = (
    cst.BaseExpression,
    cst.BaseSmallStatement,
    cst.BaseStatement,
    cst.Arg,
    cst.AssignTarget,
    cst.SubscriptElement,
    cst.Element,
)

# One method holding a statement of each kind, laid out in each way the generation must
# reproduce: continuation lines, strings over several lines (their lines are not indented by
# the generation), a continuation line left of its block, `elif` (generated alone as `if`),
# bodies on the header's line, several statements on one line, tabs, comments between lines.
EDGES = '''
class Edges(Base):
    @decorated
    def method(self, a, b=(1,
                           2)):
        """Doc
        string."""
        x = foo(
            a,
            b=[1, 2,
               3],
        )
        y = 1; z = 2
        if a:  # comment
            x = 1
        elif b > (2 +
                  3):
            x = 2
        elif b:
            pass
        else:
            x = 3
        if a: x = 4
        for i, j in zip(a,
                        b):
            x += i
        else:
            x = 5
        while x < 10:
            x += 1
        else:
            y = 6
        try:
            x = 7
        except (ValueError,
                KeyError) as err:
            x = 8
        except Exception:
            x = 9
        else:
            x = 10
        finally:
            x = 11
        with open(a) as f, open(b) as g:
            x = f
        t = bar(1,
    2)
        u = x if x else (
            y)
        def inner(q):
            return q + 1
        class Inner:
            v = 1
        match x:
            case 1:
                x = 12
            case _:
                x = 13
        async_value = [k for k in range(3)
                       if k]
        return x \\
            + y

    @staticmethod  # the line scan ends `method` after this line, CPython's tree does not
    async def other(self):
        async for k in aiter():
            await k
        async with ctx() as c:
            return c

    def strings(self):
        # Lines of a string left of the method end its class for the line scan that bounds
        # blocks: the class is parsed from the whole module, and placed from its tree.
        s = """first
second
    third"""
        return s
'''

# A tab is one column, as libcst and CPython count them; a function generated alone is
# indented with the file's unit (a tab here), a statement generated alone keeps its columns.
TABS = "def top_level(a):\n\tif a:\n\t\treturn [a,\n\t\t        a]\n\treturn None\n"
TAB_METHODS = (
    "class Backend:\n\tdef replay(self, bs):\n\t\tif bs:\n\t\t\treturn [bs,\n"
    "\t\t\t        bs]\n\t\tx = (bs +\n  bs)\n\t\treturn None\n"
)


def functions(source: SourceFile) -> list[FunctionSource]:
    found: list[FunctionSource] = []
    for block in source.blocks:
        if block.kind == "class":
            found.extend(source.class_source(block).methods.values())
        else:
            found.append(source.function_source(block))
    return found


def starts_at(source: SourceFile, node: cst.CSTNode, span: Span) -> bool:
    """Whether the node's code starts in the file where `span` does."""
    code = source.code_for(node)
    if isinstance(node, cst.BaseExpression):
        for _ in node.lpar:  # an expression's parentheses are outside its span
            code = code.lstrip()[1:]
    code = code.lstrip().splitlines()[0]
    return source.lines[span.line - 1][span.column :].startswith(code)


def compare(source: SourceFile) -> tuple[int, int]:
    """(nodes compared, nodes placed from their statement). Each expression (or argument,
    element, target, statement of a line's several) placed from its statement starts where
    its code does in the file, each statement at the first character of its line; each node gets the whole function's
    span wherever that one is right. (Generating a whole function shifts the lines of a string,
    the lines after a backslash and those left of their block by the function's column; the
    nodes there are not placed from the whole function unless their statement is not.)"""
    compared = anchored = 0
    for fn in functions(source):
        assert fn.loc(fn.node).span.line == fn.def_line  # and the anchors are built
        for node in descendants(fn.node):
            if not isinstance(node, PLACED):
                continue
            span = fn.loc(node).span
            placed = bool(fn._anchors) and id(node) in fn._anchors  # type: ignore[operator]
            whole = fn._whole_function_span(node)
            if not isinstance(node, cst.BaseStatement):
                if placed:
                    assert starts_at(source, node, span), (source.path, span, node)
                if starts_at(source, node, whole) and whole.end_line == whole.line:
                    assert span == whole, (source.path, fn.name, node)
            else:

                def at_code(place: Span) -> bool:
                    line = source.lines[place.line - 1]
                    return place.column == len(line) - len(line.lstrip())

                if placed:
                    assert at_code(span), (source.path, span)
                if at_code(whole):
                    assert (span.line, span.column) == (whole.line, whole.column), (
                        source.path,
                        node,
                    )
            compared += 1
            anchored += placed
    return compared, anchored


@pytest.mark.parametrize("path", SOURCES, ids=str)
def test_fixture_spans_equal_whole_function_spans(path: Path) -> None:
    compare(SourceFile.from_bytes(str(path), path.read_bytes()))


def test_every_kind_of_statement() -> None:
    source = SourceFile("edges.py", EDGES)
    compared, anchored = compare(source)
    placed = {fn.name for fn in functions(source) if fn._anchors is not None}
    assert placed == {"method", "other", "strings"}
    # Not placed from a statement: nested definitions and `match`, the body on the line of its
    # `if`, the parameters and decorators.
    assert compared > 200 and anchored > compared * 0.6, (compared, anchored)


def test_tab_indented_columns_are_the_files() -> None:
    compared, anchored = compare(SourceFile("tabs.py", TABS))
    # All but the `def`, its name and parameter, and the `if` statement (its test is placed).
    assert compared > 10 and anchored == compared - 4


def test_tab_indented_methods_are_placed_at_the_files_columns() -> None:
    source = SourceFile("tab_methods.py", TAB_METHODS)
    (fn,) = functions(source)
    assert (fn.def_line, fn.indent) == (2, 1)
    compared, anchored = compare(source)
    assert anchored > 10 and compared > anchored
    for node in descendants(fn.node):  # anchored or whole, every node starts at its code
        if isinstance(node, (cst.If, cst.Return, cst.Assign)):
            span = fn.loc(node).span
            line = source.lines[span.line - 1]
            assert span.column == len(line) - len(line.lstrip()), (node, span)
        elif isinstance(node, cst.Name):
            assert starts_at(source, node, fn.loc(node).span), node


def test_functions_that_do_not_line_up_are_placed_whole() -> None:
    source = SourceFile("one_line.py", "def f(a): return a + 1\n")
    (fn,) = functions(source)
    assert fn.loc(fn.node).span.line == 1 and fn._anchors is None
    compare(source)


@pytest.mark.network
def test_real_backends() -> None:
    folder = sglang_tree("0.5.23") / "srt" / "layers" / "attention"
    total = placed = 0
    for name in ("trtllm_mla_backend.py", "flashattention_backend.py", "triton_backend.py"):
        path = folder / name
        compared, anchored = compare(SourceFile.from_bytes(str(path), path.read_bytes()))
        total += compared
        placed += anchored
    assert total > 20_000 and placed > total * 0.8, (total, placed)


NESTED_FIRST = """class Attention(Module):
    @dataclass
    class Config:
        heads: int

        @classmethod
        def from_config(cls, config):
            return cls(config.heads)

    def __init__(self, config):
        self.qo_indptr = arange(0, 9, 3)

    def forward(self, batch):
        return self.qo_indptr[: batch.bs + 1]
"""


def test_methods_after_a_nested_class_are_placed_at_their_def() -> None:
    source = SourceFile("nested.py", NESTED_FIRST)
    methods = {fn.name: fn for fn in functions(source)}
    assert {name: fn.def_line for name, fn in methods.items()} == {"__init__": 10, "forward": 13}
    compare(source)
    init = methods["__init__"]
    assign = init.node.body.body[0]  # type: ignore[attr-defined]
    assert init.loc(assign).span.line == 11


COLUMN_0_STRING = '''class Backend:
    def __init__(self, max_bs):
        self.usage = """
a line at column 0 (inside a string)"""
        self.qo_indptr = torch.zeros(max_bs + 1)

    @property
    def width(self):
        return 1

    def replay(self, bs, forward_mode):
        if forward_mode.is_target_verify():
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * 2, step=2)
'''


@pytest.mark.parametrize("line_scan", [True, False], ids=["line-scan-blocks", "cpython-blocks"])
def test_methods_after_a_column_0_string_are_placed_at_their_def(line_scan: bool) -> None:
    # The line scan ends the class at the string's column-0 line; a block placed so (where its
    # quotes do not tell) is parsed from the whole module, and its methods are placed from
    # CPython's tree of that module. The file's own blocks are CPython's statements.
    located = (locate_blocks(split_lines(COLUMN_0_STRING)), {}) if line_scan else None
    source = SourceFile("col0.py", COLUMN_0_STRING, located=located)
    block = source.blocks[0]
    assert block.end_line == (3 if line_scan else 13)
    methods = source.class_source(block).methods
    assert {name: fn.def_line for name, fn in methods.items()} == {
        "__init__": 2,
        "width": 8,
        "replay": 11,
    }
    assert "self.qo_indptr[: bs + 1]" in methods["replay"].raw_text()
    compare(source)
    replay = methods["replay"]
    branch = replay.node.body.body[0]  # type: ignore[attr-defined]
    assert replay.loc(branch).span.line == 12


def test_descendants_leave_formatting_out_and_keep_every_code_node() -> None:
    module = cst.parse_module("if (a, b)[0] == f(x=1):  # c\n    y = [ z ]\n")
    found = list(descendants(module))
    kinds = {type(node).__name__ for node in found}
    assert {"If", "Comparison", "Subscript", "Tuple", "Call", "Arg", "Assign", "List"} <= kinds
    names = [node.value for node in found if isinstance(node, cst.Name)]
    assert names == ["a", "b", "f", "x", "y", "z"]  # in source order
    formatting = (cst.SimpleWhitespace, cst.Comma, cst.LeftParen, cst.Comment, cst.Newline)
    assert not any(isinstance(node, formatting) for node in found)


def test_positions_without_the_wrapper_are_the_wrappers() -> None:
    from idxcheck.source.positions import (
        _positions_and_code,
        _wrapped_positions,
        generated_positions,
    )

    compared = 0
    folders = ("bugs", "correct", "kernels", "runtime")
    for path in sorted(p for f in folders for p in (Path("fixtures") / f).glob("*.py")):
        module = cst.parse_module(path.read_text())
        for statement in module.body:
            alone = cst.Module(body=[statement])
            direct = generated_positions(alone)
            wrapped = _wrapped_positions(alone)
            assert direct == wrapped, path
            with_code, code = _positions_and_code(alone)
            assert with_code == wrapped and code == alone.code, path
            compared += len(direct)
    assert compared > 10_000


def test_dotted_names_are_quoted_as_libcst_generates_them() -> None:
    from idxcheck.source.files import _dotted_code, strip_comments

    empty = cst.Module(body=[])
    quoted = 0
    folders = ("bugs", "correct", "kernels", "runtime")
    texts = [p.read_text() for f in folders for p in sorted((Path("fixtures") / f).glob("*.py"))]
    texts.append("x = (a).b\ny = a . b\nz = (a.b)\nw = a.\\\n  b\nv = f(x).y\nu = a[0].b\n")
    for text in texts:
        for node in descendants(cst.parse_module(text)):
            if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Arg)):
                quick = _dotted_code(node)
                if quick is not None:
                    assert quick == strip_comments(empty.code_for_node(node))
                    quoted += 1
                else:
                    assert not isinstance(node, cst.Name) or node.lpar
    assert quoted > 1_000
    odd = cst.parse_module("x = (a).b\ny = a . b\nw = a.\\\n  b\nv = f(x).y\n").body
    assert [_dotted_code(s.body[0].value) for s in odd] == [None, None, None, None]  # type: ignore[attr-defined]
