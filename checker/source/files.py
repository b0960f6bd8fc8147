"""Reading a file and locating the code that can hold a site, cheaply.

Building a libcst tree costs many times `ast.parse`, and libcst positions more again
(bench/RESULTS.md, "Where a cold scan's time goes" and "Measurements that stood in code
comments"), so a file is first split into its top-level `class`/`def` blocks with a line scan;
only the blocks a scan needs are parsed with libcst, and positions are computed for the nodes
that end up in a report, from the statements that hold them (`idxcheck.source.positions`). A
block the line scan got wrong (a column-0 line inside a triple-quoted string) fails to parse on
its own and the whole module is parsed instead."""

from __future__ import annotations

import ast
import bisect
import hashlib
import io
import re
import sys
import tokenize
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from idxcheck.model.spans import Loc, Span
from idxcheck.source.chunks import assembled, chunk_text, class_chunks
from idxcheck.source.cstwalk import descendants
from idxcheck.source.lazy_import import lazy_module
from idxcheck.source.lines import cpython_newlines, split_lines
from idxcheck.source.positions import Anchors, anchored_span, statement_anchors

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

# An identifier is Unicode (`[^\W\d]\w*`: a letter or `_`, then letters, digits and `_`), as
# CPython reads it; `identifier` normalises it as CPython does.
_HEADER = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+([^\W\d]\w*)")
# First characters of a line that is not a column-0 statement: indentation (a form feed sets
# CPython's column back to 0: `_statement_start`), a blank line, a closing bracket of a
# continued expression, a comment.
_NOT_STATEMENT = frozenset(" \t\f\r\n)]}#")


def identifier(name: str) -> str:
    """A name as CPython knows it: NFKC-normalised (PEP 3131: a fullwidth `foo` is `foo`)."""
    if name.isascii():
        return name
    return unicodedata.normalize("NFKC", name)


# A string literal (any quotes) or a comment, in one left-to-right pass: a `#` inside a string is
# skipped with the string. Used to read code without its comments, so that what the analysis
# reads, and the digest its cached results are keyed by, ignore comments. A string's prefix
# (`r`, `b`, `f`) is left out of the pattern: it does not change where the string ends (a
# backslash keeps a quote in a raw string too), and without it every match starts with a
# quote or `#`, which the regular expression engine looks for without trying the pattern at
# each character (two to three times quicker on SGLang's files: bench/RESULTS.md, "Where a
# cold scan's Python time went").
_STRING_OR_COMMENT = re.compile(
    r'"""(?:\\.|[^\\])*?"""'
    r"|'''(?:\\.|[^\\])*?'''"
    r'|"(?:\\.|[^"\\\n])*"'
    r"|'(?:\\.|[^'\\\n])*'"
    r"|(#[^\n]*)",
    re.S,
)


def strip_comments(text: str) -> str:
    """`text` without its comments (and the blanks before each); line breaks, strings and all
    other code stay where they are. Applied to whole statements or whole files, whose strings
    are complete."""
    if "#" not in text:
        return text
    kept: list[str] = []
    last = 0
    for match in _STRING_OR_COMMENT.finditer(text):
        if match.group(1) is not None:  # a comment: the code before it, without its blanks
            kept.append(text[last : match.start()].rstrip(" \t"))
            last = match.end()
    kept.append(text[last:])
    return "".join(kept)


class SourceError(Exception):
    """A per-file problem: undecodable, binary, unparsable. Reported; the scan goes on."""


def _syntax_error(exc: SyntaxError) -> str:
    return f"syntax error at line {exc.lineno}, column {exc.offset}: {exc.msg}"


# libcst's native parser has no depth guard: nesting it cannot handle (2,000 brackets, 3,500
# lambdas, 8,000 `and` operands) kills the process with SIGSEGV instead of raising. CPython's
# parser refuses such code with an error, far more cheaply than libcst parses (bench/RESULTS.md,
# "Where a cold scan's time goes"), so every text goes through `ast.parse` first; its other
# syntax errors word the message when libcst fails too.
_TOO_DEEP = ("too many nested", "too complex", "too many levels of indentation")
_MAX_BOOL_OPERANDS = 2_000  # CPython keeps `a and b and ...` flat; libcst nests it


@contextmanager
def _top_level_depth() -> Iterator[None]:
    """Before Python 3.12, the nesting `ast.parse` accepts shrinks with the depth of the
    Python stack it is called from (3,000 `elif`s at the top, 2,700 a hundred frames down):
    the recursion limit is raised by that depth meanwhile, so that a file is accepted where
    CPython compiles it."""
    if sys.version_info >= (3, 12):
        yield
        return
    depth, frame = 0, sys._getframe()
    while frame.f_back is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + depth)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def cpython_check(text: str) -> ast.Module | SyntaxError:
    """Raise SourceError for code too deep to parse safely; return CPython's tree of `text`
    (which places its statements) or its syntax error."""
    try:
        with warnings.catch_warnings(), _top_level_depth():
            warnings.simplefilter("ignore")  # `"\d"` warns from the parser: not ours to report
            tree = ast.parse(text)
    except (RecursionError, MemoryError):
        raise SourceError("expression nested too deeply to parse") from None
    except ValueError as exc:  # a NUL byte in a text given directly (Python < 3.12)
        raise SourceError(str(exc)) from None
    except SyntaxError as exc:
        if any(words in str(exc.msg) for words in _TOO_DEEP):
            raise SourceError(f"expression nested too deeply to parse ({exc.msg})") from None
        return exc
    if len(re.findall(r"\b(?:and|or)\b", text)) > _MAX_BOOL_OPERANDS:
        for node in ast.walk(tree):
            if isinstance(node, ast.BoolOp) and len(node.values) > _MAX_BOOL_OPERANDS:
                raise SourceError(
                    f"boolean expression of {len(node.values)} operands at line {node.lineno} "
                    "is too long to parse"
                )
    return tree


def _trusted(_node: object) -> None:
    return None


def parse_module(text: str) -> cst.Module:
    """libcst's tree of `text`, built without validating each node as it is made.

    Every libcst node checks its fields in `__post_init__` (its whitespace by regular
    expression, its parentheses, ...): a check for trees built by hand, which the parser's
    own trees pass by construction, and a share of parsing worth saving (bench/RESULTS.md,
    "What each change did"). Trees built by hand here (positions) are still validated: the
    check is off during the parse only."""
    base = cst.CSTNode
    validate = base.__post_init__
    base.__post_init__ = _trusted  # type: ignore[method-assign,assignment]
    try:
        module = cst.parse_module(text)
    finally:
        base.__post_init__ = validate  # type: ignore[method-assign]
    if not text.isascii() and _changed_by_nfkc(text):
        _normalise_names(module)
    return module


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _changed_by_nfkc(text: str) -> bool:
    """Whether `text` holds a character of an identifier that NFKC changes (a fullwidth
    letter, a ligature): in a name, CPython reads it normalised (fullwidth punctuation in a
    comment does not count)."""
    if unicodedata.is_normalized("NFKC", text):
        return False  # nearly every text outside ASCII (tested in C)
    for char in set(_NON_ASCII.findall(text)):
        if ("_" + char).isidentifier() and unicodedata.normalize("NFKC", char) != char:
            return True
    return False


def _normalise_names(root: cst.CSTNode) -> None:
    """Give every name of libcst's tree CPython's spelling (`identifier`), in place: libcst
    keeps a name as written, so `self.qo_indptr` spelt with a fullwidth q would not be the
    attribute CPython runs. Columns after such a name on its line can be off by the
    characters NFKC drops."""
    for node in descendants(root):
        if type(node) is cst.Name and not node.value.isascii():
            value = identifier(node.value)
            if value != node.value:
                object.__setattr__(node, "value", value)  # the parser's own node, not shared


def _dotted_code(node: cst.CSTNode) -> str | None:
    """The code libcst generates for a name or a dotted name written without brackets or
    blanks (`torch.zeros`, `self.kv_indptr`), read from the names themselves; None for any
    other node. Most code asked for is a callee's (`call to torch.zeros is not modelled`),
    and reading the names is quicker than libcst's code generation (bench/RESULTS.md, "What
    each change did")."""
    parts: list[str] = []
    while True:
        if type(node) is cst.Name:
            if node.lpar or node.rpar:
                return None
            parts.append(node.value)
            break
        if type(node) is not cst.Attribute or node.lpar or node.rpar:
            return None
        dot = node.dot
        if not (
            type(dot.whitespace_before) is cst.SimpleWhitespace
            and dot.whitespace_before.value == ""
            and type(dot.whitespace_after) is cst.SimpleWhitespace
            and dot.whitespace_after.value == ""
            and type(node.attr) is cst.Name
            and not node.attr.lpar
            and not node.attr.rpar
        ):
            return None
        parts.append(node.attr.value)
        node = node.value
    return ".".join(reversed(parts))


@dataclass(frozen=True)
class Block:
    kind: str  # "class" | "def"
    name: str
    start_line: int  # first line, decorators included (1-based)
    header_line: int  # the line of `class`/`def`
    end_line: int  # last line (inclusive)


def too_large(size: int, limit: int) -> str:
    """The per-file error of a file of `size` bytes over `limit`."""
    return (
        f"file of {size:,} bytes, over the limit of {limit:,} bytes "
        "(`max-file-bytes` in [tool.idxcheck])"
    )


def decode_source(data: bytes) -> tuple[str, str]:
    """The text of a source file and the encoding it was decoded from."""
    if b"\x00" in data:
        raise SourceError("binary file (contains a NUL byte)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        head = b"\n".join(data.splitlines()[:2])
        if re.search(rb"coding[:=]", head):
            raise SourceError(f"bad encoding declaration: {exc}") from None
        encoding = "utf-8"  # no declaration: the default, whose decoding error says more
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return cpython_newlines(text), encoding


def readable_text(data: bytes) -> str:
    """The text of a file for its comments and code frames: decoded as it declares (as the
    analysis decodes it), else as UTF-8 with replacement characters where it does not."""
    try:
        return decode_source(data)[0]
    except SourceError:
        return cpython_newlines(data.decode("utf-8", errors="replace"))


# What the text scan leaves to `locate_blocks`: a carriage return (a text not yet given
# CPython's line ends) and a form feed (which can put a statement at column 0 after it).
_LINE_SCAN_ONLY = "\r\f"
# A line break and a column-0 statement after it: a pattern that starts with a literal is
# searched for at memchr speed, where `^` in MULTILINE mode is tried at every position.
_STATEMENT_AFTER_BREAK = re.compile(r"\n[^ \t\r\n)\]}#]")
_HEADER_AT = re.compile(r"(?:async[ \t]+def|def|class)[ \t]+([^\W\d]\w*)")


# Where a block's text lies in its file: the offsets of its first line, of its `class`/`def`
# line, of the end of that line and of its end.
Offsets = tuple[int, int, int, int]


def locate_blocks_in_text(text: str) -> tuple[list[Block], dict[Block, Offsets]] | None:
    """`locate_blocks` on the text itself, without splitting it into lines, with where each
    block lies in the text; None for a text with a carriage return or a form feed, which
    `locate_blocks` handles. Most files of a scan are only looked at for their blocks and
    headers, and splitting them was a noticeable share of a pre-commit run (bench/RESULTS.md,
    "What each change did", and "Measurements that stood in code comments")."""
    if any(mark in text for mark in _LINE_SCAN_ONLY):
        return None
    offsets = [m.start() + 1 for m in _STATEMENT_AFTER_BREAK.finditer(text)]
    if text and text[0] not in _NOT_STATEMENT:
        offsets.insert(0, 0)
    numbers: list[int] = []
    line, previous = 1, 0
    for offset in offsets:
        line += text.count("\n", previous, offset)
        previous = offset
        numbers.append(line)
    # (start, its offset, header, its offset, kind, name)
    starts: list[tuple[int, int, int, int, str, str]] = []
    decorator: tuple[int, int] | None = None
    for number, offset in zip(numbers, offsets, strict=True):
        if text.startswith("@", offset):
            if decorator is None:
                decorator = (number, offset)
            continue
        match = _HEADER_AT.match(text, offset)
        if match:
            kind = "class" if text.startswith("class", offset) else "def"
            start, start_offset = decorator if decorator is not None else (number, offset)
            name = identifier(match.group(1))
            starts.append((start, start_offset, number, offset, kind, name))
        decorator = None
    line_count = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    boundaries = [*numbers, line_count + 1]
    boundary_offsets = [*offsets, len(text)]
    blocks: list[Block] = []
    offsets_of: dict[Block, Offsets] = {}
    for start, start_offset, header, header_offset, kind, name in starts:
        index = bisect.bisect_right(boundaries, header)
        end, position = boundaries[index] - 1, boundary_offsets[index]
        while end > header:
            # Line `end` runs up to `position` (its "\n" included, when it has one).
            stop = position - 1 if text.endswith("\n", 0, position) else position
            begin = text.rfind("\n", 0, stop) + 1
            if text[begin:stop].strip():
                break
            end, position = end - 1, begin
        block = Block(kind, name, start, header, end)
        blocks.append(block)
        header_end = text.find("\n", header_offset) + 1 or len(text)
        offsets_of[block] = (start_offset, header_offset, header_end, position)
    return blocks, offsets_of


def _statement_start(line: str) -> int | None:
    """Where the code of a column-0 statement starts on `line` (0, or just past the form feeds
    CPython sets its column back to 0 with: `\\fclass A:`); None for any other line."""
    if not line:
        return None
    if line[0] not in _NOT_STATEMENT:
        return 0
    code = line.lstrip(" \t\f")
    lead = len(line) - len(code)
    if lead == 0 or line[lead - 1] != "\f" or not code or code[0] in _NOT_STATEMENT:
        return None
    return lead


def locate_blocks(lines: list[str]) -> list[Block]:
    """Top-level `class` and `def` blocks, found by indentation alone (`lines`: CPython's)."""
    blocks: list[Block] = []
    starts: list[tuple[int, int, str, str]] = []  # (start, header, kind, name)
    decorator_start: int | None = None
    # Column-0 statement lines, found in one comprehension: the loop below sees only them.
    statement_lines = [
        index
        for index, line in enumerate(lines, start=1)
        if line and (line[0] not in _NOT_STATEMENT or _statement_start(line) is not None)
    ]
    for index in statement_lines:
        line = lines[index - 1]
        code = line[_statement_start(line) or 0 :]
        if code.startswith("@"):
            if decorator_start is None:
                decorator_start = index
            continue
        match = _HEADER.match(code)
        if match:
            kind = "class" if code.startswith("class") else "def"
            start = decorator_start if decorator_start is not None else index
            starts.append((start, index, kind, identifier(match.group(1))))
        decorator_start = None
    # A block ends just before the next column-0 statement after its header.
    boundaries = [*statement_lines, len(lines) + 1]
    for start, header, kind, name in starts:
        end = boundaries[bisect.bisect_right(boundaries, header)] - 1
        while end > header and not lines[end - 1].strip():
            end -= 1
        blocks.append(Block(kind, name, start, header, end))
    return blocks


def _ends_in_a_string(
    located: tuple[list[Block], dict[Block, Offsets]], text: str, lines: Callable[[], list[str]]
) -> bool:
    """Whether a block the line scan found may end inside a triple-quoted string: its text
    holds an odd number of `\"\"\"` or of `\'\'\'`. A line of a string at column 0 ends a block
    early, and the rest of the class (the hit lines after the string) would lie in no block."""
    blocks, offsets = located
    for block in blocks:
        found = offsets.get(block)
        if found is not None:
            doubles = text.count('"""', found[0], found[3])
            singles = text.count("'''", found[0], found[3])
        else:
            piece = "".join(lines()[block.start_line - 1 : block.end_line])
            doubles, singles = piece.count('"""'), piece.count("'''")
        if doubles % 2 or singles % 2:
            return True
    return False


def _blocks_of_tree(text: str, lines: list[str]) -> tuple[list[Block], dict[Block, Offsets]] | None:
    """The top-level blocks as CPython's tree places its statements (`locate_blocks`'s ends,
    from the statements' first lines); None where CPython does not parse the text."""
    try:
        tree = cpython_check(text)
    except SourceError:
        return None
    if isinstance(tree, SyntaxError):
        return None
    defined = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    firsts: list[int] = []
    starts: list[tuple[int, int, str, str]] = []
    for stmt in tree.body:
        decorators = stmt.decorator_list if isinstance(stmt, defined) else []
        first = min([stmt.lineno, *(d.lineno for d in decorators)])
        firsts.append(first)
        if isinstance(stmt, defined):
            kind = "class" if isinstance(stmt, ast.ClassDef) else "def"
            starts.append((first, stmt.lineno, kind, stmt.name))
    boundaries = [*firsts, len(lines) + 1]
    blocks: list[Block] = []
    for start, header, kind, name in starts:
        end = boundaries[bisect.bisect_right(boundaries, header)] - 1
        while end > header and not lines[end - 1].strip():
            end -= 1
        blocks.append(Block(kind, name, start, header, end))
    return blocks, {}


class FunctionSource:
    """A function or method as parsed, with lazily computed positions of its nodes."""

    def __init__(
        self,
        file: SourceFile,
        node: cst.FunctionDef,
        def_line: int,
        indent: int,
        owner: str | None,
        indent_unit: str = "    ",
    ) -> None:
        self.file = file
        self.node = node
        self.def_line = def_line
        self.indent = indent  # the `def`'s column, in characters
        self.indent_unit = indent_unit  # what libcst indents each block of the file with
        self.owner = owner  # the class name, for methods
        self.end_line = def_line  # set by the class that holds it
        self._positions: dict[cst.CSTNode, object] | None = None
        self._anchors: Anchors | None = None
        self._anchored = False  # whether `_anchors` was built (None: the function is placed whole)
        self._line_offset = 0
        self._locs: dict[int, Loc] = {}
        # Path-sensitive interpretation describes the same node once per path: generate its
        # text once. The node is kept with its text, so its id cannot be reused.
        self._codes: dict[int, tuple[cst.CSTNode, str]] = {}
        self._raw: tuple[int, str] | None = None  # (end_line, text) of `raw_text`
        self._ordinals: dict[int, int] | None = None  # by `ordinal`

    @property
    def name(self) -> str:
        return self.node.name.value

    @property
    def qualname(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name

    def ordinal(self, node: cst.CSTNode) -> int:
        """The place of `node` among the function's loops, `try` statements and `case`s, in
        source order: a name for it that stays the same from run to run and process to
        process (its id does not), so that conditions about it key the verdict cache."""
        if self._ordinals is None:
            # Exact types: a failed `isinstance` with libcst classes is a Python call per class.
            kinds = {cst.For, cst.While, cst.Try, cst.TryStar, cst.MatchCase}
            self._ordinals = {}
            for found in descendants(self.node):
                if type(found) in kinds:
                    self._ordinals[id(found)] = len(self._ordinals)
        return self._ordinals.get(id(node), -1)

    def loc(self, node: cst.CSTNode) -> Loc:
        key = id(node)
        found = self._locs.get(key)
        if found is None:
            found = Loc(lambda: self._span(node), lambda: self.code(node))
            self._locs[key] = found
        return found

    def code(self, node: cst.CSTNode) -> str:
        key = id(node)
        found = self._codes.get(key)
        if found is None:
            found = self._codes[key] = (node, self.file.code_for(node))
        return found[1]

    def raw_text(self) -> str:
        """The function's lines as written in the file, comments left out (cheap: no code
        generation)."""
        # Asked for by each pass over a class's methods (self writes, in-place writes, calls).
        if self._raw is None or self._raw[0] != self.end_line:
            text = strip_comments("".join(self.file.lines[self.def_line - 1 : self.end_line]))
            self._raw = (self.end_line, text)
        return self._raw[1]

    def _span(self, node: cst.CSTNode) -> Span:
        if not self._anchored:
            placed = self.file.cpython_def(self.def_line)
            if placed is not None:
                try:
                    self._anchors = statement_anchors(self.node, *placed, self.indent)
                except RecursionError:  # statements nested too deeply: placed whole below
                    self._anchors = None
            self._anchored = True
        if self._anchors:
            found = anchored_span(self._anchors, node, self.file.path, self.file.lines)
            if found is not None:
                return found
        return self._whole_function_span(node)

    def _whole_function_span(self, node: cst.CSTNode) -> Span:
        if self._positions is None:
            # Positions of this function alone: a module holding only it, generated with
            # position tracking, then shifted to where the function sits in the file.
            from libcst.metadata import MetadataWrapper, PositionProvider

            module = cst.Module(body=[self.node], default_indent=self.indent_unit)
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            try:
                self._positions = dict(wrapper.resolve(PositionProvider))
            except (RecursionError, KeyError):
                # The position pass recurses once per nesting level (a KeyError wraps the
                # RecursionError): nodes of a function this deep are placed at its `def`.
                self._positions = {}
            name_pos = self._positions.get(self.node.name)
            if name_pos is not None:
                self._line_offset = self.def_line - name_pos.start.line  # type: ignore[attr-defined]
        pos = self._positions.get(node)
        if pos is None:
            return Span(self.file.path, self.def_line, self.indent, self.def_line, self.indent)
        start, end = pos.start, pos.end  # type: ignore[attr-defined]
        return Span(
            self.file.path,
            start.line + self._line_offset,
            start.column + self.indent,
            end.line + self._line_offset,
            end.column + self.indent,
        )


@dataclass
class ClassSource:
    file: SourceFile
    node: cst.ClassDef
    block: Block
    methods: dict[str, FunctionSource] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name.value

    def base_names(self) -> list[str]:
        names: list[str] = []
        for arg in self.node.bases:
            value = arg.value
            if isinstance(value, cst.Subscript):
                value = value.value  # a generic base, `Builder[Metadata]`, is the class `Builder`
            if isinstance(value, cst.Name):
                names.append(value.value)
            elif isinstance(value, cst.Attribute):
                names.append(value.attr.value)
        return names

    def decorator_names(self) -> list[str]:
        names: list[str] = []
        for deco in self.node.decorators:
            expr = deco.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func
            if isinstance(expr, cst.Name):
                names.append(expr.value)
            elif isinstance(expr, cst.Attribute):
                names.append(expr.attr.value)
        return names


# A block's text parsed: CPython's tree (or its syntax error) and libcst's module (None where
# libcst's parser rejects the text).
Parsed = tuple[ast.Module | SyntaxError, "cst.Module | None"]


class ParseStoreLike(Protocol):
    def get(self, text: str) -> Parsed | None: ...
    def parsed(self, text: str, trees: Parsed) -> None: ...
    def get_chunk(self, text: str) -> cst.Module | None: ...
    def parsed_chunk(self, text: str, module: cst.Module) -> None: ...


# Parses made ahead of their use (`parse_ahead`), by the exact text parsed: each is taken by
# the first `parse_block` of that text, and a text that changed in between is parsed anew.
_parsed_ahead: dict[str, Parsed] = {}
# Where parses are kept from one scan to the next (`idxcheck.incremental.parse_store.parses_from`).
parse_store: ParseStoreLike | None = None


def _parse_text(text: str, cpython: ast.Module | SyntaxError | None = None) -> Parsed:
    """CPython's tree of a block's text (or its syntax error) and libcst's module (None where
    libcst's parser rejects the text); SourceError for code too deep to parse. `cpython`:
    CPython's tree of the text where it is at hand."""
    if cpython is None:
        cpython = cpython_check(text)
    try:
        return cpython, parse_module_as_cpython(text, cpython)
    except cst.ParserSyntaxError:
        return cpython, None
    except RecursionError:
        raise SourceError("expression nested too deeply to parse") from None


def parse_module_as_cpython(text: str, cpython: ast.Module | SyntaxError) -> cst.Module:
    """`parse_module`, and for a text CPython parses (`cpython`) that libcst rejects because
    it mixes tabs and spaces, the same text indented with spaces (`spaces_for_tabs`)."""
    try:
        return parse_module(text)
    except cst.ParserSyntaxError:
        if not isinstance(cpython, ast.Module) or "\t" not in text:
            raise
        respaced = spaces_for_tabs(text)
        if respaced is None or respaced == text:
            raise
        return parse_module(respaced)


def spaces_for_tabs(text: str) -> str | None:
    """`text` with the indentation of each line that starts a statement or a comment made
    spaces, one per character; None where the tokenizer rejects it or a form feed indents.

    libcst keeps each block's indentation as a string that its inner blocks must start with,
    so it rejects indentation that CPython accepts: `\\t` and `        ` are the same column
    to CPython when consistent at tab sizes 8 and 1. CPython makes sure that lines compare the
    same at tab size 1, the number of characters, so the spaced text has CPython's blocks,
    with every node on the same line and at the same column in characters. Lines inside a
    string are left as they are: no token starts at their indentation."""
    if "\f" in text:
        return None
    # Per line (1-based), the column of the first token that starts on it outside an f-string.
    first: dict[int, int] = {}
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 and later
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    skipped = (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER)
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in skipped:
                continue
            if depth == 0:
                first.setdefault(tok.start[0], tok.start[1])
            if tok.type == fstring_start:
                depth += 1
            elif tok.type == fstring_end:
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        return None
    lines = split_lines(text)
    for row, column in first.items():
        line = lines[row - 1]
        code = line.lstrip(" \t")
        lead = len(line) - len(code)
        if column == lead and "\t" in line[:lead]:
            lines[row - 1] = " " * lead + code
    return "".join(lines)


def _trees_of(text: str) -> Parsed:
    """A block's text parsed: made ahead in this process (`parse_ahead`), else kept from an
    earlier scan (`parse_store`), else parsed now (and handed to the store)."""
    if _parsed_ahead:
        found = _parsed_ahead.pop(text, None)
        if found is not None:
            return found
    return _stored_or_parsed(text)


def _stored_or_parsed(text: str) -> Parsed:
    store = parse_store
    if store is None:
        return _parse_text(text)
    found = store.get(text)
    if found is None:
        found = _parsed_by_chunks(text, store)
        store.parsed(text, found)
    return found


def _parsed_by_chunks(text: str, store: ParseStoreLike) -> Parsed:
    """A class's text parsed chunk by chunk (`chunks`), each chunk's tree taken from the store
    where it has it; parsed whole where the text is not cut, or a chunk fails to parse."""
    cpython = cpython_check(text)
    cut = class_chunks(text, cpython) if isinstance(cpython, ast.Module) else None
    if cut is None:
        return _parse_text(text, cpython)
    modules: list[cst.Module] = []
    try:
        for index, chunk in enumerate(cut):
            parsed_text = chunk_text(index, chunk)
            module = store.get_chunk(parsed_text)
            if module is None:
                module = parse_module(parsed_text)
                store.parsed_chunk(parsed_text, module)
            modules.append(module)
        return cpython, assembled(modules)
    except Exception:  # a chunk libcst rejects, a tree that does not fit: the whole text decides
        return _parse_text(text, cpython)


R = TypeVar("R")


def reading(source: SourceFile, name: str, compute: Callable[[], R]) -> R:
    """`compute()`, once per text: a function of the file's text and blocks alone, and of
    idxcheck's code and profile, which key the kept readings (`idxcheck.incremental.located`); `name`
    names the function and any argument it takes. It spares a pre-commit run the tree-wide
    tests on each candidate file (whether it feeds the tree facts, which of its classes are
    runners, the backends it registers, the mode members it mentions) in its serial part
    (bench/RESULTS.md, "What each change did")."""
    readings = source.readings
    if name in readings:
        return cast(R, readings[name])
    found = readings[name] = compute()
    source.new_readings = True
    return found


def data_digest(data: bytes) -> str:
    """The digest of a file's bytes: what a scan with the cache keys what it found in them by
    (`idxcheck.incremental.located`), and what a text left out of a pickle is checked against."""
    return hashlib.sha256(data).hexdigest()


# Set while a scan pickles its files for its helper (`idxcheck.parallel.workers`, `texts_left_out`).
_leave_texts_out = False


@contextmanager
def texts_left_out() -> Iterator[None]:
    """Within, a file pickled leaves out its text where it was read from disk with the cache
    on (`SourceFile.data_digest` known): the process that unpickles it reads the file again,
    if it uses the text at all, and checks the bytes against their digest. A scan hands its
    helper the whole tree (nearly all of it the candidate files' text), and the helper's
    analysis after an edit reads three to five of the texts."""
    global _leave_texts_out
    before = _leave_texts_out
    _leave_texts_out = True
    try:
        yield
    finally:
        _leave_texts_out = before


class TextChanged(Exception):
    """A file's text, left out of a pickle (`texts_left_out`), cannot be read again as it was:
    the file changed or went away since. Not a `SourceError`: the analysis does not report it
    for the file; the process that handed the file over analyses it itself."""


def parse_ahead(text: str) -> None:
    """Parse a block's text (`SourceFile.parse_text`) now, for a later `parse_block` of it in
    this process or one forked from it. A text that does not parse is left to that call. The
    trees are taken from the store where it has them, and the parse is noted there as any
    other: the classes hinted to a scan's helper (the bases and subclasses of an edited class)
    are unchanged texts that a pre-commit run would otherwise parse again each time."""
    if text not in _parsed_ahead:
        try:
            _parsed_ahead[text] = _stored_or_parsed(text)
        except SourceError:
            pass


class SourceFile:
    def __init__(
        self,
        path: str,
        text: str,
        encoding: str = "utf-8",
        located: tuple[list[Block], dict[Block, Offsets]] | None = None,
    ) -> None:
        """`located`: the blocks and offsets `locate_blocks_in_text` (or `locate_blocks`, with
        no offsets) found in this very text before (`idxcheck.incremental.located`)."""
        self.path = path
        text = cpython_newlines(text)  # lines are CPython's (`idxcheck.extract.lines`)
        self._text: str | None = text  # None where left out of a pickle (`texts_left_out`)
        self.length = len(text)
        self.encoding = encoding  # what the bytes were decoded from
        self._lines: list[str] | None = None
        if located is None:
            located = locate_blocks_in_text(text)
            if located is None:
                located = (locate_blocks(self.lines), {})
            if _ends_in_a_string(located, text, lambda: self.lines):
                located = _blocks_of_tree(text, self.lines) or located
        self.blocks, self._offsets = located
        self._by_name: dict[str, list[Block]] = {}
        for block in self.blocks:
            self._by_name.setdefault(block.name, []).append(block)
        self._parsed: dict[Block, cst.CSTNode] = {}
        # The indentation unit libcst found in the text each block was parsed from (a tab in a
        # tab-indented file): a function generated alone is indented with it, as in the file.
        self._indent_units: dict[Block, str] = {}
        self._classes: dict[Block, ClassSource] = {}
        self._functions: dict[Block, FunctionSource] = {}
        self._whole: cst.Module | None = None
        # CPython's trees of the parsed texts, with the file line of each text's line 0.
        self._cpython: dict[Block | None, tuple[ast.Module, int]] = {}
        self._kept: set[Block] = set()
        self._module_for_codegen: cst.Module | None = None
        self._code_digest: str | None = None
        self._text_digest: str | None = None
        self._code_text: str | None = None
        # Whether the text holds the suppression marker, where the reading found out from the
        # bytes (`engine.load_file`); None: not known, `suppressions.read_comments` looks.
        self.holds_marker: bool | None = None
        # The digest of the bytes the text was decoded from, where a scan with the cache read
        # them (`idxcheck.incremental.located`).
        self.data_digest: str | None = None
        # What functions of the text alone found in it (`reading`), by name; kept from one
        # scan with the cache to the next with the located blocks (`idxcheck.incremental.located`).
        self.readings: dict[str, object] = {}
        self.new_readings = False  # whether a reading was added since the file was read

    @property
    def text(self) -> str:
        """The file's text (read again from the file where it was left out of a pickle)."""
        text = self._text
        if text is None:
            text = self._text = self._read_again()
        return text

    def _read_again(self) -> str:
        try:
            with open(self.path, "rb") as handle:
                # The text came from at most 8 bytes per character (UTF-32, a "\r\n" made
                # "\n"): more is not the file read before, whose digest is checked below.
                data = handle.read(8 * self.length + 8)
        except OSError as exc:
            raise TextChanged(f"{self.path}: {exc}") from None
        if data_digest(data) != self.data_digest:
            raise TextChanged(f"{self.path} changed")
        return decode_source(data)[0]

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        if _leave_texts_out and self.data_digest is not None and self._text is not None:
            state["_text"] = None
            state["_lines"] = None
            state["_code_text"] = None
        return state

    def borrow(self, other: SourceFile, readings: Iterable[str]) -> bool:
        """Take from `other`, read from the same bytes (the same `data_digest`), the text
        where this file's was left out of a pickle and those of `readings` that it made and
        this file has not; False, taking nothing, where the bytes are not known the same."""
        if self.data_digest is None or other.data_digest != self.data_digest:
            return False
        if self._text is None and other._text is not None:
            self._text, self._lines = other._text, other._lines
        for name in readings:
            if name in other.readings and name not in self.readings:
                self.readings[name] = other.readings[name]
        return True

    @property
    def offsets(self) -> dict[Block, Offsets]:
        """Where each block lies in the text (empty for a text located by its lines)."""
        return self._offsets

    @property
    def lines(self) -> list[str]:
        """The file's lines as CPython counts them, line ends kept; split on first use."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def header_text(self, block: Block) -> str:
        """A block's decorators and `class`/`def` line."""
        found = self._offsets.get(block)
        if found is None:
            return "".join(self.lines[block.start_line - 1 : block.header_line])
        return self.text[found[0] : found[2]]

    def block_text(self, block: Block, decorators: bool = True) -> str:
        """A block's lines, with its decorators or from its `class`/`def` line."""
        found = self._offsets.get(block)
        if found is None:
            first = block.start_line if decorators else block.header_line
            return "".join(self.lines[first - 1 : block.end_line])
        return self.text[found[0] if decorators else found[1] : found[3]]

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> SourceFile:
        return cls(path, *decode_source(data))

    def keep_parse(self, block: Block) -> None:
        """Keep this block's tree through `forget_parses`: a class that other files' classes
        inherit from is asked for again by each of them."""
        self._kept.add(block)

    def has_class_source(self, block: Block) -> bool:
        """Whether this class block's tree is at hand (parsed and not forgotten)."""
        return block in self._classes

    def forget_parses(self) -> None:
        """Drop the syntax trees parsed so far, but the kept ones (they are parsed again if
        asked for): a scan keeps the trees of the file it analyses, not of every file it has
        analysed."""
        self._parsed = {b: n for b, n in self._parsed.items() if b in self._kept}
        self._classes = {b: c for b, c in self._classes.items() if b in self._kept}
        self._functions.clear()
        self._whole = None
        self._cpython = {b: t for b, t in self._cpython.items() if b in self._kept}

    # -- lookup ---------------------------------------------------------------------------

    def blocks_named(self, name: str) -> list[Block]:
        return self._by_name.get(name, [])

    def blocks_containing(self, line_numbers: list[int]) -> list[Block]:
        found: list[Block] = []
        for block in self.blocks:
            if any(block.start_line <= n <= block.end_line for n in line_numbers):
                found.append(block)
        return found

    def code_for(self, node: cst.CSTNode) -> str:
        """The code of a node, without the comments inside it: what a report quotes depends
        on the code alone, as the cached analysis of a file does (`code_digest`)."""
        simple = _dotted_code(node)
        if simple is not None:
            return simple
        if self._module_for_codegen is None:
            self._module_for_codegen = cst.Module(body=[])
        try:
            return strip_comments(self._module_for_codegen.code_for_node(node))
        except RecursionError:  # libcst's code generation recurses once per nesting level
            return "<expression nested too deeply to print>"

    def code_text(self) -> str:
        """The file's text without its comments (line breaks kept): what its digest and its hit
        lines are read from, stripped once (stripping a tree's candidate files is not cheap:
        bench/RESULTS.md, "What each change did")."""
        if self._code_text is None:
            self._code_text = strip_comments(self.text)
        return self._code_text

    def text_digest(self) -> str:
        """A digest of the file's whole text."""
        if self._text_digest is None:
            data = self.text.encode("utf-8", "surrogatepass")
            self._text_digest = hashlib.sha256(data).hexdigest()
        return self._text_digest

    def has_code_digest(self) -> bool:
        return self._code_digest is not None

    def remember_code_digest(self, value: str) -> None:
        """`code_digest` as computed before for this text (`parts.known_code_digests`)."""
        self._code_digest = value

    def code_digest(self) -> str:
        """A digest of the file's code: comments and trailing blank lines do not count, line
        numbers and every other character do."""
        if self._code_digest is None:
            code = self.code_text().rstrip()
            self._code_digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
        return self._code_digest

    # -- parsing --------------------------------------------------------------------------

    def parse_block(self, block: Block) -> cst.CSTNode:
        found = self._parsed.get(block)
        if found is not None:
            return found
        text = self.parse_text(block)
        node: cst.CSTNode | None = None
        cpython, module = _trees_of(text)
        if isinstance(cpython, ast.Module):
            self._cpython[block] = (cpython, block.start_line - 1)
        if module is not None and len(module.body) == 1:
            node = module.body[0]
            self._indent_units[block] = module.default_indent
        if node is None or not isinstance(node, (cst.ClassDef, cst.FunctionDef)):
            node = self._from_whole_module(block)
            self._indent_units[block] = self.whole_module().default_indent
        self._parsed[block] = node
        return node

    def parse_text(self, block: Block) -> str:
        """The text that `parse_block` parses for `block`."""
        return "".join(self.lines[block.start_line - 1 : block.end_line])

    def cpython_def(self, line: int) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
        """CPython's node of the function or method whose `def` is on file line `line`, and
        the file line of its tree's line 0, from the texts parsed so far."""
        for tree, base in self._cpython.values():
            for stmt in tree.body:
                inner = stmt.body if isinstance(stmt, ast.ClassDef) else [stmt]
                for node in inner:
                    if (
                        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and node.lineno + base == line
                    ):
                        return node, base
        return None

    def cpython_class(self, block: Block) -> tuple[ast.ClassDef, int]:
        """CPython's tree of a class block and the file line of its tree's line 0, found as
        `parse_block` finds libcst's: from the block's text, else the first top-level class or
        function of its name in the whole module. Trees parsed here are kept with the others."""
        found = self._cpython.get(block)
        if found is None:
            tree = cpython_check("".join(self.lines[block.start_line - 1 : block.end_line]))
            if isinstance(tree, ast.Module):
                found = self._cpython[block] = (tree, block.start_line - 1)
        if found is not None and len(found[0].body) == 1:
            if isinstance(found[0].body[0], ast.ClassDef):
                return found[0].body[0], found[1]
        whole = self._cpython.get(None)
        if whole is None:
            tree = cpython_check(self.text)
            if isinstance(tree, SyntaxError):
                raise SourceError(_syntax_error(tree))
            whole = self._cpython[None] = (tree, 0)
        for stmt in whole[0].body:
            named = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(stmt, named) and stmt.name == block.name:
                if isinstance(stmt, ast.ClassDef):
                    return stmt, 0
                break
        raise SourceError(f"cannot locate class `{block.name}` (line {block.header_line})")

    def _from_whole_module(self, block: Block) -> cst.CSTNode:
        module = self.whole_module()
        for stmt in module.body:
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value == block.name:
                return stmt
        raise SourceError(f"cannot locate `{block.name}` (line {block.header_line})")

    def whole_module(self) -> cst.Module:
        if self._whole is None:
            cpython = cpython_check(self.text)
            if isinstance(cpython, ast.Module):
                self._cpython[None] = (cpython, 0)
            try:
                self._whole = parse_module_as_cpython(self.text, cpython)
            except cst.ParserSyntaxError as exc:
                if isinstance(cpython, SyntaxError):  # clearer, and on the right line
                    raise SourceError(_syntax_error(cpython)) from None
                raise SourceError(
                    f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: "
                    f"{exc.message}"
                ) from None
            except RecursionError:
                raise SourceError("expression nested too deeply to parse") from None
        return self._whole

    def class_source(self, block: Block) -> ClassSource:
        found = self._classes.get(block)
        if found is not None:
            return found
        node = self.parse_block(block)
        if not isinstance(node, cst.ClassDef):
            raise SourceError(f"`{block.name}` is not a class")
        cls = ClassSource(self, node, block)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        stmts = [stmt for stmt in body if isinstance(stmt, cst.FunctionDef)]
        placed = self._method_lines(block, [stmt.name.value for stmt in stmts])
        if placed is None:  # CPython's tree does not match libcst's: the line scan places them
            def_lines = self._def_lines(block)
            seen: dict[str, int] = {}
            placed = []
            for stmt in stmts:
                name = stmt.name.value
                occurrence = seen.get(name, 0)
                seen[name] = occurrence + 1
                candidates = def_lines.get(name, [])
                line, indent = (
                    candidates[occurrence]
                    if occurrence < len(candidates)
                    else (block.header_line, 4)
                )
                placed.append((line, indent, block.end_line))
        starts = sorted(line for line, _, _ in placed)
        for stmt, (line, indent, last) in zip(stmts, placed, strict=True):
            # Later definitions of a name (property setters, overloads) win, as in Python.
            fn = FunctionSource(self, stmt, line, indent, cls.name, self._indent_units[block])
            later = [n for n in starts if n > line]
            fn.end_line = later[0] - 1 if later else max(block.end_line, last)
            cls.methods[stmt.name.value] = fn
        self._classes[block] = cls
        return cls

    def _method_lines(self, block: Block, names: list[str]) -> list[tuple[int, int, int]] | None:
        """(`def` line, indent, last line) of each method of a class block, from CPython's tree
        of the text `parse_block` parsed: exact where the line scan is not (a string whose lines
        start at column 0 ends the scanned block early, and the class is parsed from the whole
        module). None where CPython's methods are not libcst's."""
        try:
            cls, base = self.cpython_class(block)
        except SourceError:
            return None
        methods = [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if [m.name for m in methods] != names:
            return None
        placed: list[tuple[int, int, int]] = []
        for method in methods:
            line = method.lineno + base
            text = self.lines[line - 1]
            indent = len(text) - len(text.lstrip(" \t"))  # characters: a tab is one column
            placed.append((line, indent, (method.end_lineno or method.lineno) + base))
        return placed

    def function_source(self, block: Block) -> FunctionSource:
        found = self._functions.get(block)
        if found is not None:
            return found
        node = self.parse_block(block)
        if not isinstance(node, cst.FunctionDef):
            raise SourceError(f"`{block.name}` is not a function")
        fn = FunctionSource(self, node, block.header_line, 0, None, self._indent_units[block])
        fn.end_line = block.end_line
        self._functions[block] = fn
        return fn

    def _def_lines(self, block: Block) -> dict[str, list[tuple[int, int]]]:
        """`def` lines of the methods directly inside a class block, by name: the least
        indented ones (a nested class's methods, which may come first, are indented more)."""
        pattern = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+([^\W\d]\w*)")
        defs: list[tuple[int, str, str]] = []
        for line_no in range(block.header_line + 1, block.end_line + 1):
            match = pattern.match(self.lines[line_no - 1])
            if match:
                defs.append((line_no, match.group(1), identifier(match.group(2))))
        found: dict[str, list[tuple[int, int]]] = {}
        body_indent = min((len(indent.expandtabs()) for _, indent, _ in defs), default=0)
        for line_no, indent, name in defs:
            if len(indent.expandtabs()) == body_indent:
                # The column in characters (a tab is one), as libcst and CPython count them.
                found.setdefault(name, []).append((line_no, len(indent)))
        return found
