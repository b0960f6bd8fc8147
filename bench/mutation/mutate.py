"""Width mutations of real attention backends, found and judged without idxcheck.

A *site* is where a backend fixes a per-request width: the step of an `arange` (keyword `step=`
or third positional argument), the fill value of a `torch.full` that is summed with `cumsum`,
and the value given to a grid scalar (`max_extend_len`, `max_seq_len_q`, ...: names with the
profile's grid role) as a keyword, an assignment target, an attribute or a dict key. When the
width is a local name, its assignments in the same function are the sites (changing the
definition changes every use consistently, as a real edit would).

Mutation operators on a site's width expression `w`:

- `swap`: a configuration attribute of the class (`self.num_draft_tokens`, assigned from
  `server_args.speculative_num_draft_tokens` in `__init__`) replaced by one of another symbol;
- `add1`: `w` -> `w + 1`;
- `drop1`: `x + 1` -> `x`;
- `drop-arm`: `a if c else b` -> `a`, and -> `b`.

Inside an `arange` every occurrence of `w` (end and step) is replaced, so the index pointer
keeps `bs + 1` entries and only its stride changes.

A mutant is *exposable* when some configuration of the domain makes it wrong where the
original is right: a stride that differs from the original's value, a grid scalar below it.
This is decided by evaluating both expressions over a grid of configurations, with mode
predicates (`forward_mode.is_target_verify()`) and every other leaf (locals, runtime values,
calls) free but shared by the original and the mutant; a conversion that keeps an integer's
value (`int(x)`, `x.item()`) is the value it converts."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from idxcheck.model.kinds import Role
from idxcheck.profiles.schema import Profile, load_profile

STRIDE = "stride"
GRID = "grid"

_Node = TypeVar("_Node", bound=cst.CSTNode)

# Configuration symbols and the attribute names (of server_args, or constructor parameters)
# that carry them.
SYMBOL_NAMES: dict[str, str] = {
    "speculative_num_steps": "steps",
    "num_steps": "steps",
    "speculative_eagle_topk": "topk",
    "topk": "topk",
    "speculative_num_draft_tokens": "ndt",
    "num_draft_tokens": "ndt",
}


@dataclass(frozen=True)
class Site:
    kind: str  # stride | grid
    function: str  # Class.method
    line: int  # first line of the width expression
    end_line: int  # last line of the statement that holds it
    text: str  # the width expression as written
    start_line: int = 0  # first line of that statement


@dataclass(frozen=True)
class Mutant:
    site: Site
    operator: str  # swap | add1 | drop1 | drop-arm
    description: str  # `old` -> `new`
    source: str  # the whole mutated file
    exposable: bool | None  # None: not decidable by the evaluator (counted as exposable)


# ---------------------------------------------------------------------------------------------
# Finding sites


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.found: list[
            tuple[str, str, cst.BaseExpression, cst.CSTNode]
        ] = []  # kind, fn, expr, anchor
        self.config_attrs: dict[str, dict[str, str]] = {}  # class -> attr -> symbol
        self.other_strides = 0  # arange/full strides of other vectors (page tables, KV lengths)
        self._class: list[str] = []
        self._function: list[cst.FunctionDef] = []

    # -- scopes
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._class.append(node.name.value)
        self.config_attrs.setdefault(node.name.value, {})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._class.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._function.pop()

    @property
    def qualname(self) -> str:
        fn = self._function[-1].name.value if self._function else "<module>"
        return f"{self._class[-1]}.{fn}" if self._class else fn

    # -- configuration attributes: `self.x = <...speculative_num_steps...>` in __init__
    def visit_Assign(self, node: cst.Assign) -> None:
        if self._class and self._function and self._function[-1].name.value == "__init__":
            for target in node.targets:
                t = target.target
                if (
                    isinstance(t, cst.Attribute)
                    and isinstance(t.value, cst.Name)
                    and t.value.value == "self"
                ):
                    symbol = _symbol_of(node.value)
                    if symbol is not None:
                        self.config_attrs[self._class[-1]][t.attr.value] = symbol
        for target in node.targets:
            self._grid_target(target.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._grid_target(node.target, node.value, node)

    def _grid_target(
        self, target: cst.BaseExpression, value: cst.BaseExpression, anchor: cst.CSTNode
    ) -> None:
        name = None
        if isinstance(target, cst.Name):
            name = target.value
        elif isinstance(target, cst.Attribute):
            name = target.attr.value
        if name and self.profile.role_of(name) == Role.GRID and not _is_none(value):
            self.found.append((GRID, self.qualname, value, anchor))

    def visit_Call(self, node: cst.Call) -> None:
        callee = _dotted(node.func)
        if callee.split(".")[-1] == "arange":
            step = next(
                (a.value for a in node.args if a.keyword and a.keyword.value == "step"), None
            )
            positional = [a for a in node.args if a.keyword is None and a.star == ""]
            if step is None and len(positional) >= 3:
                step = positional[2].value
            if step is not None and not isinstance(step, cst.Integer):
                if self._bound_to_qo(node):
                    self.found.append((STRIDE, self.qualname, step, node))
                else:
                    self.other_strides += 1
        if callee.split(".")[-1] == "cumsum" and node.args:
            inner = node.args[0].value
            if isinstance(inner, cst.Subscript):  # cumsum(lens[:-1])
                inner = inner.value
            if isinstance(inner, cst.Name) and self._function:
                inner = _full_bound_to(self._function[-1], inner.value) or inner
            if isinstance(inner, cst.Call) and _dotted(inner.func).split(".")[-1] == "full":
                fill = _full_value(inner)
                if fill is not None and not isinstance(fill, cst.Integer):
                    if self._bound_to_qo(node):
                        self.found.append((STRIDE, self.qualname, fill, inner))
                    else:
                        self.other_strides += 1
        for arg in node.args:
            if (
                arg.keyword
                and self.profile.role_of(arg.keyword.value) == Role.GRID
                and not _is_none(arg.value)
            ):
                self.found.append((GRID, self.qualname, arg.value, arg))

    def _bound_to_qo(self, node: cst.CSTNode) -> bool:
        """Whether the statement holding `node` hands it to a query index pointer (by the
        profile's names): an assignment target, a keyword, a dict key, a `.copy_()` receiver."""
        child, current = node, self.get_metadata(ParentNodeProvider, node, None)
        while current is not None:
            if isinstance(current, cst.Arg) and current.keyword is not None:
                return self.profile.role_of(current.keyword.value) == Role.QO
            if isinstance(current, cst.DictElement) and isinstance(current.key, cst.SimpleString):
                key = current.key.evaluated_value
                return isinstance(key, str) and self.profile.role_of(key) == Role.QO
            if isinstance(current, cst.Call) and child is not current.func:
                func = current.func
                if isinstance(func, cst.Attribute) and func.attr.value == "copy_":
                    return self._qo_name(func.value)
            if isinstance(current, cst.Assign):
                return any(self._qo_name(t.target) for t in current.targets)
            if isinstance(current, cst.AnnAssign | cst.AugAssign):
                return self._qo_name(current.target)
            if isinstance(current, cst.BaseStatement):
                return False
            child, current = current, self.get_metadata(ParentNodeProvider, current, None)
        return False

    def _qo_name(self, target: cst.BaseExpression) -> bool:
        while isinstance(target, cst.Subscript):
            target = target.value
        if isinstance(target, cst.Name):
            return self.profile.role_of(target.value) == Role.QO
        if isinstance(target, cst.Attribute):
            return self.profile.role_of(target.attr.value) == Role.QO
        return False

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                key = element.key.evaluated_value
                if (
                    isinstance(key, str)
                    and self.profile.role_of(key) == Role.GRID
                    and not _is_none(element.value)
                ):
                    self.found.append((GRID, self.qualname, element.value, element))


def _full_bound_to(fn: cst.FunctionDef, name: str) -> cst.Call | None:
    """The `torch.full(...)` call assigned to `name` in the function, if any."""
    for rhs in _local_definitions(fn, name):
        if isinstance(rhs, cst.Call) and _dotted(rhs.func).split(".")[-1] == "full":
            return rhs
    return None


def _full_value(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword and arg.keyword.value == "fill_value":
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    return positional[1].value if len(positional) >= 2 else None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _symbol_of(value: cst.BaseExpression) -> str | None:
    """The configuration symbol an `__init__` right-hand side reads, when it reads just one
    (`model_runner.server_args.speculative_num_steps`, `topk`, `args.num_draft_tokens`)."""
    found = {SYMBOL_NAMES[n.value] for n in _nodes(value, cst.Name) if n.value in SYMBOL_NAMES}
    if len(found) != 1:
        return None
    if isinstance(value, cst.Name | cst.Attribute):
        return found.pop()
    return None


def _nodes(node: cst.CSTNode, kind: type[_Node]) -> Iterator[_Node]:
    """Every node of type `kind` in `node`'s subtree, itself included, in source order."""
    if isinstance(node, kind):
        yield node
    for child in node.children:
        yield from _nodes(child, kind)


def _enclosing_statement(
    node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> cst.CSTNode:
    current = node
    while current in parents and not isinstance(current, cst.BaseStatement):
        current = parents[current]
    return current


def _resolve(
    expr: cst.BaseExpression,
    fn: cst.FunctionDef,
    cls: str,
    functions: dict[str, cst.FunctionDef],
    depth: int,
) -> list[cst.BaseExpression]:
    """Where a width is written: through local names (`n = ...`) and helpers of the class
    (`self._width(mode)` -> its `return` values)."""
    if depth == 0:
        return [expr]
    if isinstance(expr, cst.Name) and _local_definitions(fn, expr.value):
        return [
            v
            for rhs in _local_definitions(fn, expr.value)
            for v in _resolve(rhs, fn, cls, functions, depth - 1)
        ]
    helper = _helper_of(expr, cls, functions)
    if helper is not None and _returns(helper):
        return [
            v for ret in _returns(helper) for v in _resolve(ret, helper, cls, functions, depth - 1)
        ]
    return [expr]


def _helper_of(
    expr: cst.BaseExpression, cls: str, functions: dict[str, cst.FunctionDef]
) -> cst.FunctionDef | None:
    """The method of the same class that `self.method(...)` calls, if any."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        owner = expr.func.value
        if isinstance(owner, cst.Name) and owner.value == "self":
            return functions.get(f"{cls}.{expr.func.attr.value}")
    return None


def _returns(fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            if node.value is not None and not isinstance(node.value, cst.Tuple):
                found.append(node.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn  # not into nested functions

    fn.visit(Finder())
    return found


def _local_definitions(fn: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """Right-hand sides of `name = ...` anywhere in the function."""
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                found.append(node.value)

    fn.visit(Finder())
    return found


@dataclass
class _Located:
    kind: str
    function: str
    expr: cst.BaseExpression
    scope: cst.CSTNode  # where every occurrence of expr is replaced
    cls: str


def find_sites(
    module: cst.Module, profile: Profile
) -> tuple[list[_Located], dict[str, dict[str, str]], MetadataWrapper]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = _Collector(profile)
    wrapper.visit(collector)
    functions: dict[str, cst.FunctionDef] = {}

    class Functions(cst.CSTVisitor):
        def __init__(self) -> None:
            self.cls: list[str] = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.cls.append(node.name.value)

        def leave_ClassDef(self, node: cst.ClassDef) -> None:
            self.cls.pop()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            key = f"{self.cls[-1]}.{node.name.value}" if self.cls else node.name.value
            functions.setdefault(key, node)

    module.visit(Functions())
    located: list[_Located] = []
    seen: set[int] = set()
    for kind, function, expr, anchor in collector.found:
        cls = function.split(".")[0] if "." in function else ""
        fn = functions.get(function)
        resolved = _resolve(expr, fn, cls, functions, 3) if fn is not None else [expr]
        if resolved == [expr]:
            targets: list[tuple[cst.BaseExpression, cst.CSTNode]] = [
                (expr, anchor if kind == STRIDE else expr)
            ]
        else:
            targets = [(value, value) for value in resolved]
        for target, scope in targets:
            if id(target) in seen:
                continue
            seen.add(id(target))
            located.append(_Located(kind, function, target, scope, cls))
    return located, collector.config_attrs, wrapper


# ---------------------------------------------------------------------------------------------
# Mutating


class _Replace(cst.CSTTransformer):
    """Replace every node deep-equal to `old` inside `scope` (or `old` itself) with `new`."""

    def __init__(
        self, scope: cst.CSTNode, old: cst.BaseExpression, new: cst.BaseExpression
    ) -> None:
        self.scope = scope
        self.old = old
        self.new = new
        self.depth = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.scope:
            self.depth += 1
        return True

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        inside = self.depth > 0
        if original is self.scope:
            self.depth -= 1
        if (
            (inside or original is self.old)
            and isinstance(original, cst.BaseExpression)
            and original.deep_equals(self.old)
        ):
            return (
                self.new.with_changes(lpar=original.lpar, rpar=original.rpar)
                if _parenthesised(original)
                else _wrap(self.new)  # `bs * n + 1` with n -> n + 1 is `bs * (n + 1) + 1`
            )
        return updated


def _parenthesised(node: cst.BaseExpression) -> bool:
    return bool(getattr(node, "lpar", ()))


def _wrap(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(
        node, cst.Name | cst.Attribute | cst.Integer | cst.Call | cst.Subscript
    ) or _parenthesised(node):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _operators(
    expr: cst.BaseExpression, config: dict[str, str]
) -> Iterator[tuple[str, cst.BaseExpression]]:
    # swap: each config attribute read in expr, for each attribute of another symbol
    attrs_in = sorted(
        {
            node.attr.value
            for node in _nodes(expr, cst.Attribute)
            if isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and node.attr.value in config
        }
    )
    for attr in attrs_in:
        others: dict[str, str] = {}
        for other, symbol in sorted(config.items()):
            if symbol != config[attr] and symbol not in others:
                others[symbol] = other
        for _symbol, other in sorted(others.items()):
            old = cst.Attribute(cst.Name("self"), cst.Name(attr))
            new = cst.Attribute(cst.Name("self"), cst.Name(other))
            yield "swap", _replace_all(expr, old, new)
    bare = expr.with_changes(lpar=[], rpar=[]) if _parenthesised(expr) else expr
    yield "add1", cst.BinaryOperation(_wrap(expr), cst.Add(), cst.Integer("1"))
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, cst.Add):
        if isinstance(bare.right, cst.Integer) and bare.right.value == "1":
            yield "drop1", bare.left
        elif isinstance(bare.left, cst.Integer) and bare.left.value == "1":
            yield "drop1", bare.right
    if isinstance(bare, cst.IfExp):
        yield "drop-arm", _wrap(bare.body)
        yield "drop-arm", _wrap(bare.orelse)
        # `+ 1` added to or dropped from one arm (a swap already reaches into the arms)
        for operator, arm in _operators(bare.body, {}):
            if operator != "swap":
                yield operator, expr.with_changes(body=_wrap(arm))
        for operator, arm in _operators(bare.orelse, {}):
            if operator != "swap":
                yield operator, expr.with_changes(orelse=_wrap(arm))


def _replace_all(
    expr: cst.BaseExpression, old: cst.BaseExpression, new: cst.BaseExpression
) -> cst.BaseExpression:
    class Swap(cst.CSTTransformer):
        def leave_Attribute(
            self, original: cst.Attribute, updated: cst.Attribute
        ) -> cst.BaseExpression:
            return (
                new.with_changes(lpar=original.lpar, rpar=original.rpar)
                if original.deep_equals(old)
                else updated
            )

    result = expr.visit(Swap())
    assert isinstance(result, cst.BaseExpression)
    return result


def mutants(source: str, profile: Profile | None = None) -> list[Mutant]:
    profile = profile or load_profile("sglang")
    module = cst.parse_module(source)
    located, config_attrs, wrapper = find_sites(module, profile)
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    out: list[Mutant] = []
    for site in located:
        config = config_attrs.get(site.cls, {})
        pos = positions[site.expr]
        statement = _enclosing_statement(site.expr, parents)
        end = positions[statement].end.line if statement in positions else pos.end.line
        start = positions[statement].start.line if statement in positions else pos.start.line
        text = module.code_for_node(site.expr)
        where = Site(site.kind, site.function, pos.start.line, end, " ".join(text.split()), start)
        for operator, replacement in _operators(site.expr, config):
            mutated = module.visit(_Replace(site.scope, site.expr, replacement))
            new_text = " ".join(module.code_for_node(replacement).split())
            out.append(
                Mutant(
                    where,
                    operator,
                    f"`{where.text}` -> `{new_text}`",
                    mutated.code,
                    exposable(site.kind, site.expr, replacement, config),
                )
            )
    return out


# ---------------------------------------------------------------------------------------------
# Judging: does some configuration make the mutant wrong where the original is right?


class NotEvaluable(Exception):
    pass


@dataclass(frozen=True)
class _Cfg:
    steps: int
    topk: int
    ndt: int


def _configs() -> list[_Cfg]:
    out = []
    for steps, topk, ndt in itertools.product(range(1, 5), range(1, 4), range(2, 13)):
        if topk == 1 and ndt != steps + 1:
            continue
        if topk > 1 and ndt - 1 > topk + (steps - 1) * topk * topk:
            continue
        out.append(_Cfg(steps, topk, ndt))
    return out


CONFIGS = _configs()


def _converted(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """What a conversion that keeps an integer's value converts: `int(x)` and `x.item()` (a
    one-element tensor's number) are `x`. A conditional that picks a conversion by the value's
    type (`int(x.item()) if isinstance(x, torch.Tensor) else int(x)`) gives the same number
    on either arm; the other arm is a crash, not another width."""
    if not isinstance(node, cst.Call):
        return None
    if (
        isinstance(node.func, cst.Name)
        and node.func.value == "int"
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    ):
        return node.args[0].value
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "item" and not node.args:
        return node.func.value
    return None


def _free_leaves(node: cst.BaseExpression, config: dict[str, str], out: dict[str, str]) -> None:
    """Leaves that are not configuration: name -> 'int' or 'bool' (mode predicate calls)."""
    inner = _converted(node)
    if inner is not None:
        _free_leaves(inner, config, out)
        return
    if isinstance(node, cst.Integer):
        return
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and node.attr.value in config
    ):
        return
    if isinstance(node, cst.BinaryOperation):
        _free_leaves(node.left, config, out)
        _free_leaves(node.right, config, out)
        return
    if isinstance(node, cst.IfExp):
        _free_leaves(node.body, config, out)
        _free_leaves(node.orelse, config, out)
        out[_key(node.test)] = "bool"
        return
    out[_key(node)] = "int"


def _key(node: cst.CSTNode) -> str:
    return " ".join(cst.Module(body=[]).code_for_node(node).split())


def _eval(node: cst.BaseExpression, config: dict[str, str], cfg: _Cfg, env: dict[str, int]) -> int:
    inner = _converted(node)
    if inner is not None:
        return _eval(inner, config, cfg, env)
    if isinstance(node, cst.Integer):
        return int(node.value)
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and node.attr.value in config
    ):
        return int(getattr(cfg, config[node.attr.value]))
    if isinstance(node, cst.BinaryOperation):
        left = _eval(node.left, config, cfg, env)
        right = _eval(node.right, config, cfg, env)
        if isinstance(node.operator, cst.Add):
            return left + right
        if isinstance(node.operator, cst.Subtract):
            return left - right
        if isinstance(node.operator, cst.Multiply):
            return left * right
        if isinstance(node.operator, cst.FloorDivide) and right:
            return left // right
        raise NotEvaluable(type(node.operator).__name__)
    if isinstance(node, cst.IfExp):
        branch = node.body if env[_key(node.test)] else node.orelse
        return _eval(branch, config, cfg, env)
    return env[_key(node)]


def exposable(
    kind: str, original: cst.BaseExpression, mutant: cst.BaseExpression, config: dict[str, str]
) -> bool | None:
    """Whether some configuration makes the mutant wrong where the original is right: a stride
    that differs, a grid scalar below the original. In the configurations enumerated here no
    request carries more than `num_draft_tokens` tokens (target verify and draft extend v2
    carry that many, EAGLE v1 draft extend at most `min(num_steps + 1, num_draft_tokens)`), so
    a grid scalar of configuration values alone that stays at `num_draft_tokens` or above
    still covers every request; a grid with other leaves (a front-token count, a runtime
    value) may have to be larger, and is compared with the original alone."""
    leaves: dict[str, str] = {}
    _free_leaves(original, config, leaves)
    _free_leaves(mutant, config, leaves)
    names = sorted(leaves)
    choices = [(0, 1) if leaves[n] == "bool" else (1, 2, 5) for n in names]
    capped = "int" not in leaves.values()
    try:
        for cfg in CONFIGS:
            for values in itertools.product(*choices):
                env = dict(zip(names, values, strict=True))
                a = _eval(original, config, cfg, env)
                b = _eval(mutant, config, cfg, env)
                if kind == STRIDE:
                    if b != a:
                        return True
                elif b < a and not (capped and b >= cfg.ndt):
                    return True
    except NotEvaluable:
        return None
    return False
