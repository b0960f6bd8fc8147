"""Lists of a class filled by `append` in a loop over `range(N)`, one entry per index.

    self.row_starts = []
    for k in range(max_bs):
        self.row_starts.append(torch.zeros(k + 2))

holds N entries, entry k being the appended value with `k` for the loop variable. Which appends
can be read so is decided here from the syntax alone: an append that a loop may skip on some
iterations (under a condition on the loop variable or on what the body computes, after a
`continue` or `break`), that runs more than once per iteration, in nested loops, in a loop over
something other than `range`, or outside a loop, does not give entry k to iteration k; nor does
a list that the class also changes in another way. Those reads stay UNSUPPORTED, with the
reason said here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from idxcheck.source.cstwalk import children
from idxcheck.source.files import FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import Sym, Term

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

# The prefix of a loop variable's symbol: hidden from counterexamples (a name beginning with
# `@`), and replaced by the index an entry is read at before any obligation sees it.
LOOP_PREFIX = "@loop:"


@dataclass(frozen=True)
class FillLoop:
    """A loop `for <variable> in range(<count>)` whose appends give an entry per index."""

    variable: str
    index: Sym
    count: Term
    origin: str  # the loop's place: function and ordinal


def appended_attr(node: cst.Call) -> str | None:
    """`self.<attr>.append(<one positional argument>)`: the attribute."""
    func = node.func
    if not (type(func) is cst.Attribute and func.attr.value == "append"):
        return None
    if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
        return None
    owner = func.value
    if not (
        type(owner) is cst.Attribute
        and type(owner.value) is cst.Name
        and owner.value.value == "self"
    ):
        return None
    return owner.attr.value


def range_count(loop: cst.For) -> cst.BaseExpression | None:
    """`N` of `for x in range(N)` or `range(0, N)` (no step), the target a plain name."""
    call = loop.iter
    if not (
        type(loop.target) is cst.Name
        and type(call) is cst.Call
        and type(call.func) is cst.Name
        and call.func.value == "range"
        and all(arg.keyword is None and not arg.star for arg in call.args)
    ):
        return None
    if len(call.args) == 1:
        return call.args[0].value
    first = call.args[0].value if len(call.args) == 2 else None
    if type(first) is cst.Integer and first.evaluated_value == 0:
        return call.args[1].value
    return None


# The loops classified last, by id (the loop kept, so that its id is not reused): a class's
# methods are run by several interpreters, and a helper once per call.
_CLASSIFIED: dict[int, tuple[cst.For | cst.While, dict[int, tuple[cst.Call, str | None]]]] = {}
_CLASSIFIED_MAX = 512


def classify_appends(loop: cst.For | cst.While) -> dict[int, tuple[cst.Call, str | None]]:
    """Each `self.<attr>.append(...)` of the loop's body (by the id of its call): None where
    the loop gives its entry k to iteration k, else why not."""
    known = _CLASSIFIED.get(id(loop))
    if known is not None and known[0] is loop:
        return known[1]
    found = _classify(loop)
    if len(_CLASSIFIED) >= _CLASSIFIED_MAX:
        _CLASSIFIED.clear()
    _CLASSIFIED[id(loop)] = (loop, found)
    return found


def _classify(loop: cst.For | cst.While) -> dict[int, tuple[cst.Call, str | None]]:
    found: dict[int, tuple[cst.Call, str | None]] = {}
    ranged = type(loop) is cst.For and range_count(loop) is not None
    variable = ""
    if type(loop) is cst.For and type(loop.target) is cst.Name and ranged:
        variable = loop.target.value
    assigned = _assigned_names(loop.body) | ({variable} if variable else set())
    skips = _skips(loop.body)
    per_attr: dict[str, int] = {}
    for call, conditions, nested in _appends(loop.body, (), False):
        attr = appended_attr(call)
        assert attr is not None
        per_attr[attr] = per_attr.get(attr, 0) + 1
        reason: str | None = None
        if not ranged:
            reason = f"`self.{attr}` is appended to in a loop that is not over `range(...)`"
        elif nested:
            reason = f"`self.{attr}` is appended to in nested loops"
        elif skips:
            reason = f"`self.{attr}` is appended to in a loop that may skip an iteration ({skips})"
        elif any(_mentions(test, assigned) for test in conditions):
            reason = (
                f"`self.{attr}` is appended to under a condition that depends on the loop's "
                "iteration"
            )
        found[id(call)] = (call, reason)
    for call, reason in list(found.values()):
        attr = appended_attr(call)
        assert attr is not None
        if reason is None and per_attr[attr] > 1:
            found[id(call)] = (
                call,
                f"`self.{attr}` is appended to more than once in one iteration",
            )
    return found


# The tests an append is under; None for a condition the syntax does not name (a `try` body
# that may stop part way, a `match` case, a short circuit), which counts as one that depends on
# the iteration.
Conditions = tuple["cst.BaseExpression | None", ...]


def _appends(
    node: cst.CSTNode, conditions: Conditions, nested: bool
) -> Iterator[tuple[cst.Call, Conditions, bool]]:
    """The appends under `node`, with the tests they are under and whether a loop nested in
    the one examined holds them (a function defined inside is not walked)."""
    if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        return
    if type(node) is cst.Call and appended_attr(node) is not None:
        yield node, conditions, nested
    if type(node) is cst.If:
        yield from _appends(node.test, conditions, nested)
        yield from _appends(node.body, (*conditions, node.test), nested)
        if node.orelse is not None:
            yield from _appends(node.orelse, (*conditions, node.test), nested)
        return
    if type(node) is cst.IfExp:
        yield from _appends(node.test, conditions, nested)
        yield from _appends(node.body, (*conditions, node.test), nested)
        yield from _appends(node.orelse, (*conditions, node.test), nested)
        return
    if isinstance(node, (cst.For, cst.While, cst.ListComp, cst.GeneratorExp)):
        for child in children(node):
            yield from _appends(child, conditions, True)
        return
    if isinstance(node, (cst.Try, cst.TryStar, cst.Match, cst.BooleanOperation)):
        for child in children(node):
            yield from _appends(child, (*conditions, None), nested)
        return
    for child in children(node):
        yield from _appends(child, conditions, nested)


def _mentions(test: cst.BaseExpression | None, names: set[str]) -> bool:
    if test is None:
        return True
    for node in _walk(test):
        if type(node) is cst.Name and node.value in names:
            return True
        if (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name
            and node.value.value == "self"
            and f"self.{node.attr.value}" in names
        ):
            return True
    return False


def _assigned_names(body: cst.CSTNode) -> set[str]:
    """Locals and `self` attributes the body assigns (a test of one may change per iteration)."""
    names: set[str] = set()
    for node in _walk(body):
        targets: list[cst.BaseExpression] = []
        if type(node) is cst.Assign:
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            targets = [node.target]
        elif type(node) is cst.NamedExpr:
            targets = [node.target]
        elif isinstance(node, (cst.For, cst.CompFor)):
            targets = [node.target]
        for target in targets:
            for inner in _walk(target):
                if type(inner) is cst.Name:
                    names.add(inner.value)
                elif (
                    type(inner) is cst.Attribute
                    and type(inner.value) is cst.Name
                    and inner.value.value == "self"
                ):
                    names.add(f"self.{inner.attr.value}")
    return names


def _skips(body: cst.CSTNode) -> str:
    """`continue` or `break` of the loop itself (not of a loop nested in it), else ""."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if type(node) is cst.Continue:
            return "`continue`"
        if type(node) is cst.Break:
            return "`break`"
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(children(node))
    return ""


def _walk(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    # The walks here step with `cstwalk.children`, which leaves formatting out (whitespace,
    # brackets, commas: most of a method's nodes, none an append, a test, an assignment or a
    # `self` attribute), each of its node types checked once rather than by an `isinstance`
    # through `ABCMeta` per node (bench/RESULTS.md, "The walks of the list fills").
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


def other_uses(methods: Iterable[FunctionSource], attrs: set[str]) -> dict[str, str]:
    """For each of `attrs` (lists a loop fills), why its entries are not only what the loops
    append, where the class uses it otherwise: an entry replaced (`self.x[k] = v`), another
    method of the list (`extend`, `pop`, ...), the list assigned something other than an
    empty list or None, or handed on whole (an argument, an alias, an iteration), which may
    change it where the class does not show. Reading an entry, refilling it in place, and
    testing the list (`is None`, truth) keep it."""
    found: dict[str, str] = {}
    named = re.compile(r"\bself\s*\.\s*(?:" + "|".join(map(re.escape, sorted(attrs))) + r")\b")
    for fn in methods:
        if not named.search(fn.raw_text()):
            continue  # (the syntax tree is walked only where the text names one of them)
        for attr, reason in _uses_in(fn, attrs):
            found.setdefault(attr, reason)
    return found


def _uses_in(fn: FunctionSource, attrs: set[str]) -> Iterator[tuple[str, str]]:
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(fn.node, ())]
    appends_here = {
        appended_attr(node)
        for node in _walk(fn.node)
        if type(node) is cst.Call and appended_attr(node) is not None
    }
    while stack:
        node, parents = stack.pop()
        if (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name
            and node.value.value == "self"
            and node.attr.value in attrs
        ):
            reason = _use(node, parents, fn, node.attr.value in appends_here)
            if reason is not None:
                yield node.attr.value, f"`self.{node.attr.value}` {reason}"
            continue
        for child in children(node):
            stack.append((child, (*parents, node)))


def _use(
    node: cst.Attribute, parents: tuple[cst.CSTNode, ...], fn: FunctionSource, fills: bool
) -> str | None:
    """Why this use of the list changes it or hands it on, or None where it does neither."""
    parent = parents[-1] if parents else None
    above = parents[-2] if len(parents) > 1 else None
    if type(parent) is cst.Subscript and parent.value is node:
        # An entry: read, or refilled in place through it. Replaced, it is another tensor.
        if type(above) is cst.AssignTarget or (
            isinstance(above, (cst.AugAssign, cst.AnnAssign)) and above.target is parent
        ):
            return "has an entry replaced (`self.x[k] = ...`)"
        if type(above) is cst.Del or any(type(p) is cst.Del for p in parents):
            return "has an entry deleted"
        return None
    if type(parent) is cst.Attribute and parent.value is node:
        if type(above) is cst.Call and above.func is parent and appended_attr(above):
            return None
        return f"is also changed or read by `.{parent.attr.value}`"
    if type(parent) is cst.AssignTarget:
        assign = above
        if type(assign) is cst.Assign and _empty_or_none(assign.value):
            if fn.name == "__init__" or fills:
                return None
            return f"is emptied again in `{fn.name}`, which does not fill it"
        return "is assigned something other than an empty list"
    if type(parent) is cst.AnnAssign and parent.target is node:
        if parent.value is not None and _empty_or_none(parent.value):
            if fn.name == "__init__" or fills:
                return None
            return f"is emptied again in `{fn.name}`, which does not fill it"
        return "is assigned something other than an empty list"
    if type(parent) is cst.Comparison and all(
        isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons
    ):
        return None
    if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and getattr(parent, "test", None) is node:
        return None
    if type(parent) is cst.UnaryOperation and type(parent.operator) is cst.Not:
        return None
    if type(parent) is cst.BooleanOperation:
        return None
    return "is also used whole (handed on, aliased or iterated)"


def _empty_or_none(value: cst.BaseExpression) -> bool:
    if type(value) is cst.List and not value.elements:
        return True
    if type(value) is cst.Name and value.value == "None":
        return True
    if type(value) is cst.IfExp:
        return _empty_or_none(value.body) and _empty_or_none(value.orelse)
    return False
