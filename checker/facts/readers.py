"""Who reads a value: the consumer of each index pointer and grid scalar a backend builds.

A value handed to a call (`flash_attn_varlen_func(cu_seqlens_q=...)`, a Triton launch) is read
by that call. A value stored in a field of a metadata object (`metadata.max_seq_len_q = n`,
`Meta(max_seq_len_q=n)`) is read wherever the class reads that field of that object. This
module follows the objects a backend builds (its dataclasses' constructor calls) through its
locals, its own attributes (`self.meta`, `self.meta_per_bs[bs]`), the parameters and return
values of its own methods and of its scanned bases (`super()` reaching the methods they
override), flow-sensitively within a method (an attribute re-assigned before it is handed on
holds only the new object there), per forward mode: a method the runtime calls runs in every
mode, a helper in its callers' modes, and tests of the mode narrow a path's modes.

The rule is conservative: a field is unread in a mode only when every use of its object on a
path of that mode is seen. The object is taken as read (its consumer unknown, never a note)
when, on such a path, it is handed to
any call outside the class (a library function, another class, `print`, `copy`, `vars`), stored
on another object (`forward_batch.meta = meta`), put in a container that leaves the class,
returned from a public method, captured by a nested function, read with `getattr` by a
computed name or through `__dict__`, when one of its own methods is called, when its dataclass
has methods that name the field, when the backend itself (`self`) is handed to code outside
the scanned tree, when a base class lies outside the scanned tree, or when another class of the
same file reads an attribute of the backend that holds it along with the field's name.
Code in other files that reaches into the backend's attributes from outside
(`backend.meta.max_seq_len_q`) is not searched; a subclass is analysed as its own class, and its
reads count where it inherits the write."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from idxcheck.interp.classes import inherited
from idxcheck.interp.state import Binding, ScanContext
from idxcheck.model.findings import Consumer
from idxcheck.model.kinds import BindingKind
from idxcheck.model.spans import Span
from idxcheck.source.files import ClassSource, FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.simplify import simplify_formula
from idxcheck.sym.terms import FALSE, TRUE, BoolConst, Formula, specialise_formula

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

# Rounds of the interprocedural fixpoint (parameters, returns and attributes of the class).
_ROUNDS = 6
# Bases that hold no code reading a backend's attributes.
_INERT_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})
# Calls that read no field of an object handed to them.
_INERT_CALLS = frozenset({"isinstance", "id", "type", "callable", "issubclass", "len"})


class _Obj:
    """An abstract object: one allocation site (a dataclass constructor call), a container
    literal, the backend itself, or anything from outside."""

    __slots__ = ("cls_name", "fn", "kind", "node")

    def __init__(
        self, kind: str, cls_name: str = "", node: object = None, fn: FunctionSource | None = None
    ) -> None:
        self.kind = kind  # "alloc" | "box" | "self" | "ext"
        self.cls_name = cls_name
        self.node = node
        self.fn = fn


_K = TypeVar("_K")
_V = TypeVar("_V")
SELF = _Obj("self")
MODE = _Obj("mode")  # the forward mode of the batch
EXT = _Obj("ext")
Pts = frozenset[_Obj]
Modes = frozenset[str]
NONE: Pts = frozenset()


@dataclass
class _Site:
    """A store into a field of the objects `objs` (an attribute write or a constructor
    argument), or an argument of a call that is no constructor."""

    fn: FunctionSource
    node: object
    attr: str
    objs: set[_Obj] = field(default_factory=set)
    call: object = None  # the call whose argument this is (no constructor)


@dataclass
class _Env:
    names: dict[str, Pts]
    attrs: dict[str, Pts]  # `self.x` as assigned in this method so far
    modes: frozenset[str] = frozenset()  # the forward modes this path may run in
    alive: bool = True  # false past a `return` or `raise`

    def copy(self) -> _Env:
        return _Env(dict(self.names), dict(self.attrs), self.modes, self.alive)

    def narrowed(self, modes: frozenset[str]) -> _Env:
        return _Env(dict(self.names), dict(self.attrs), modes, self.alive and bool(modes))


def _join(a: _Env, b: _Env) -> _Env:
    if not a.alive:
        return b
    if not b.alive:
        return a
    names = dict(a.names)
    for k, v in b.names.items():
        names[k] = names.get(k, NONE) | v
    attrs: dict[str, Pts] = {}
    for k in set(a.attrs) & set(b.attrs):
        attrs[k] = a.attrs[k] | b.attrs[k]
    return _Env(names, attrs, a.modes | b.modes)


_SELF_ASSIGN = re.compile(r"self\.([A-Za-z_][A-Za-z_0-9]*)\s*(?::[^=\n]*)?=[^=]")
_SELF_CALL = re.compile(r"(?:self|super\(\))\.([A-Za-z_][A-Za-z_0-9]*)\s*\(")


class ClassReaders:
    """The readers analysis of one class with its scanned bases."""

    def __init__(self, cls: ClassSource, ctx: ScanContext) -> None:
        self.cls = cls
        self.ctx = ctx
        self.methods, _, _ = inherited(cls, ctx)
        # Every method body of the hierarchy, by a key of its own: the methods `self.m`
        # reaches by their name, the ones they override (which `super().m` reaches) by
        # their owner and name.
        self.bodies: dict[str, FunctionSource] = dict(self.methods)
        self.shadowed: set[str] = set()
        for fn in self._hierarchy():
            if all(fn is not known for known in self.bodies.values()):
                key = f"{fn.owner}.{fn.name}@{fn.def_line}"
                self.bodies[key] = fn
                self.shadowed.add(key)
        self.by_name: dict[str, list[str]] = {}
        for key, fn in self.bodies.items():
            self.by_name.setdefault(fn.name, []).append(key)
        self.summary: dict[str, set[_Obj]] = {}
        self.params: dict[tuple[str, int | str], set[_Obj]] = {}
        self.returns: dict[str, set[_Obj]] = {}
        self.fields: dict[tuple[_Obj, str], set[_Obj]] = {}
        self.elements: dict[_Obj, set[_Obj]] = {}
        self.reads: dict[tuple[_Obj, str], list[tuple[FunctionSource, object, Modes]]] = {}
        # Why an object may be read where the analysis does not look, where it goes, and in
        # which forward modes.
        self.escaped: dict[_Obj, list[tuple[str, FunctionSource | None, object, Modes]]] = {}
        # (callee class name or "", why, modes): the backend itself handed outside.
        self.self_escapes: list[tuple[str, str, Modes]] = []
        self.all_modes: Modes = frozenset(ctx.modes.members)
        self.method_modes: dict[str, set[str]] = {}
        self.cur: Modes = self.all_modes  # the modes of the statement being analysed
        self.sites: dict[int, _Site] = {}
        self.allocs: dict[int, _Obj] = {}
        self.boxes: dict[int, _Obj] = {}
        self.changed = False
        self.called: set[str] = set()  # methods the class calls itself
        self.writes = self._self_writes()
        # The attributes some method of the hierarchy assigns, by the text.
        self.assigned: set[str] = set().union(*self.writes.values()) if self.writes else set()
        self.dynamic = ""  # why every field counts as read (getattr by a computed name)
        self._parents: dict[int, dict[int, object]] = {}
        self._fixpoint()
        self._close()

    # -- the analysis ----------------------------------------------------------------------

    def _fixpoint(self) -> None:
        """Rounds until what the class's attributes, parameters, fields and containers hold
        stops growing; the escapes and reads are those of the last round, which sees it all."""
        for _ in range(_ROUNDS):
            self.changed = False
            self.escaped = {}
            self.reads = {}
            self.self_escapes = []
            self.dynamic = ""
            self.sites = {}
            for name, fn in self.bodies.items():
                self._run(name, fn)
            if not self.changed:
                return
        self.dynamic = "what the class's objects hold did not settle within the analysis"

    def _self_writes(self) -> dict[str, set[str]]:
        """The attributes of `self` each method assigns, itself or through the methods it
        calls."""
        own = {n: set(_SELF_ASSIGN.findall(fn.raw_text())) for n, fn in self.bodies.items()}
        calls = {n: set(_SELF_CALL.findall(fn.raw_text())) for n, fn in self.bodies.items()}
        self.called = {c for n, found in calls.items() for c in found if c != n}
        for _ in range(len(own)):
            grew = False
            for name in own:
                for callee in calls[name]:
                    for key in self.by_name.get(callee, ()):
                        extra = own[key] - own[name]
                        if extra:
                            own[name] |= extra
                            grew = True
            if not grew:
                break
        return own

    def _hierarchy(self) -> list[FunctionSource]:
        """The methods of the class and of every base of the scanned tree, nearest first."""
        found: list[FunctionSource] = []
        pending = [(self.cls, 0)]
        seen: set[int] = set()
        while pending:
            cls, depth = pending.pop(0)
            if id(cls) in seen or depth > 6:
                continue
            seen.add(id(cls))
            found.extend(cls.methods.values())
            for name in cls.base_names():
                base = self.ctx.class_lookup(name, cls.file) if self.ctx.class_lookup else None
                if isinstance(base, ClassSource):
                    pending.append((base, depth + 1))
        return found

    def _add(self, target: dict[_K, set[_V]], key: _K, objs: Iterable[_V]) -> None:
        found = target.setdefault(key, set())
        before = len(found)
        found.update(objs)
        if len(found) != before:
            self.changed = True

    def _run(self, name: str, fn: FunctionSource) -> None:
        external = not name.startswith("_") or name.startswith("__") or name not in self.called
        external = external and name not in self.shadowed
        # A method the runtime calls runs in any mode; a helper in the modes of its callers.
        modes = self.all_modes if external else frozenset(self.method_modes.get(name, ()))
        if not modes:
            return
        env = _Env({}, {}, modes)
        params = fn.node.params
        ordered = [*params.posonly_params, *params.params]
        for index, param in enumerate(ordered):
            pname = param.name.value
            if index == 0 and pname == "self":
                env.names[pname] = frozenset({SELF})
                continue
            objs = set(self.params.get((name, index), set()))
            objs |= self.params.get((name, pname), set())
            if external:
                # Its parameters come from outside; a forward mode's is the batch's mode.
                is_mode = self.ctx.profile.entry_params.get(pname) == "mode"
                objs.add(MODE if is_mode else EXT)
            env.names[pname] = frozenset(objs)
        for param in (*params.kwonly_params,):
            env.names[param.name.value] = frozenset(
                {EXT, *self.params.get((name, param.name.value), set())}
            )
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                env.names[star.name.value] = frozenset({EXT})
        self._block(fn.node.body, env, fn, name)

    def _block(self, body: object, env: _Env, fn: FunctionSource, method: str) -> _Env:
        statements = getattr(body, "body", ())
        if not isinstance(statements, (list, tuple)):
            return env
        for stmt in statements:
            if not env.alive:
                break
            env = self._stmt(stmt, env, fn, method)
        return env

    def _stmt(self, stmt: object, env: _Env, fn: FunctionSource, method: str) -> _Env:
        self.cur = env.modes
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if env.alive:
                    env = self._small(small, env, fn, method)
            return env
        if type(stmt) is cst.If:
            # An `elif` chain is walked in a loop, not by recursion: CPython compiles chains
            # of thousands of branches.
            branches: list[_Env] = []
            test: cst.If | None = stmt
            other = env
            while test is not None:
                self._expr(test.test, other, fn, method)
                true, false = self._cond(test.test, other, fn, method)
                then = other.narrowed(true)
                if then.alive:
                    then = self._block(test.body, then, fn, method)
                branches.append(then)
                before = other
                other = other.narrowed(false)
                self.cur = before.modes
                orelse = test.orelse
                test = None
                if orelse is not None and other.alive:
                    if type(orelse) is cst.If:
                        test = orelse
                    else:
                        other = self._block(orelse.body, other, fn, method)
            for then in reversed(branches):
                other = _join(then, other)
            return other
        if isinstance(stmt, (cst.For, cst.While)):
            if type(stmt) is cst.For:
                items = self._expr(stmt.iter, env, fn, method)
                element = self._elements_of(items)
            state = env.copy()
            for _ in range(2):
                if isinstance(stmt, cst.For):
                    self._assign(stmt.target, element, state, fn, method)
                else:
                    self._expr(stmt.test, state, fn, method)
                state = _join(state, self._block(stmt.body, state.copy(), fn, method))
            if stmt.orelse is not None:
                state = self._block(stmt.orelse.body, state, fn, method)
            return _join(env, state)
        if type(stmt) is cst.With:
            for item in stmt.items:
                self._expr(item.item, env, fn, method)
                if item.asname is not None:
                    self._assign(item.asname.name, frozenset({EXT}), env, fn, method)
            return self._block(stmt.body, env, fn, method)
        if type(stmt) is cst.Try:
            start = env.copy()
            state = self._block(stmt.body, env, fn, method)
            merged = _join(start, state)
            for handler in stmt.handlers:
                h_env = merged.copy()
                if handler.name is not None:
                    self._assign(handler.name.name, frozenset({EXT}), h_env, fn, method)
                merged = _join(merged, self._block(handler.body, h_env, fn, method))
            if stmt.orelse is not None:
                merged = _join(merged, self._block(stmt.orelse.body, state.copy(), fn, method))
            if stmt.finalbody is not None:
                merged = self._block(stmt.finalbody.body, merged, fn, method)
            return merged
        if type(stmt) is cst.Match:
            self._expr(stmt.subject, env, fn, method)
            merged = env.copy()
            for case in stmt.cases:
                merged = _join(merged, self._block(case.body, env.copy(), fn, method))
            return merged
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self._captured(stmt, env, "a nested function or class uses it", fn)
            return env
        # Anything else: every object it names may be read.
        self._captured(stmt, env, "a statement idxcheck does not follow uses it", fn)
        return env

    def _small(self, small: object, env: _Env, fn: FunctionSource, method: str) -> _Env:
        self.cur = env.modes
        if type(small) is cst.Assign:
            value = self._expr(small.value, env, fn, method)
            for target in small.targets:
                self._assign(target.target, value, env, fn, method)
        elif type(small) is cst.AnnAssign:
            if small.value is not None:
                value = self._expr(small.value, env, fn, method)
                self._assign(small.target, value, env, fn, method)
        elif type(small) is cst.AugAssign:
            self._expr(small.target, env, fn, method)
            value = self._expr(small.value, env, fn, method)
            self._escape(value, "used in arithmetic", fn, small)
        elif type(small) is cst.Expr:
            self._expr(small.value, env, fn, method)
        elif type(small) is cst.Return:
            if small.value is not None:
                value = self._expr(small.value, env, fn, method)
                if method in self.shadowed or (
                    method.startswith("_") and not method.startswith("__")
                ):
                    self._add(self.returns, method, value)
                else:
                    self._escape(
                        value, f"returned by `{method}`, which is called from outside", fn, small
                    )
            env.alive = False
        elif type(small) is cst.Assert:
            self._expr(small.test, env, fn, method)
            if small.msg is not None:
                self._expr(small.msg, env, fn, method)
        elif type(small) is cst.Raise:
            if small.exc is not None:
                self._escape(self._expr(small.exc, env, fn, method), "raised", fn, small)
            env.alive = False
        elif type(small) is cst.Del:
            pass
        elif isinstance(small, (cst.Pass, cst.Break, cst.Continue, cst.Import, cst.ImportFrom)):
            pass
        else:
            self._captured(small, env, "a statement idxcheck does not follow uses it", fn)
        return env

    def _assign(
        self, target: object, value: Pts, env: _Env, fn: FunctionSource, method: str
    ) -> None:
        if type(target) is cst.Name:
            env.names[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            parts = self._elements_of(value)
            for element in target.elements:
                inner = element.value
                if type(inner) is cst.StarredElement:
                    inner = inner.value
                self._assign(inner, parts, env, fn, method)
        elif type(target) is cst.Attribute:
            receiver = self._expr(target.value, env, fn, method)
            attr = target.attr.value
            self._store(fn, target, attr, receiver)
            if SELF in receiver:
                if receiver == frozenset({SELF}):
                    env.attrs[attr] = value
                else:
                    env.attrs.pop(attr, None)
                self._add(self.summary, attr, value)
            for obj in receiver:
                if obj.kind == "alloc":
                    self._add(self.fields, (obj, attr), value)
                elif obj is EXT or obj.kind == "box":
                    self._escape(value, "stored on an object from outside the class", fn, target)
        elif type(target) is cst.Subscript:
            receiver = self._expr(target.value, env, fn, method)
            for index in target.slice:
                self._slice(index, env, fn, method)
            for obj in receiver:
                if obj.kind == "box":
                    self._add(self.elements, obj, value)
                elif obj is not SELF:
                    self._escape(value, "stored in a container from outside the class", fn, target)
        elif type(target) is cst.StarredElement:
            self._assign(target.value, value, env, fn, method)
        else:
            self._escape(value, "assigned to a target idxcheck does not follow", fn, target)

    def _store(self, fn: FunctionSource, node: object, attr: str, objs: Iterable[_Obj]) -> None:
        site = self.sites.get(id(node))
        if site is None:
            site = self.sites[id(node)] = _Site(fn, node, attr)
        site.objs.update(objs)

    def _slice(self, element: object, env: _Env, fn: FunctionSource, method: str) -> None:
        inner = getattr(element, "slice", None)
        if type(inner) is cst.Index:
            self._expr(inner.value, env, fn, method)
        elif type(inner) is cst.Slice:
            for part in (inner.lower, inner.upper, inner.step):
                if part is not None:
                    self._expr(part, env, fn, method)

    def _elements_of(self, objs: Pts) -> Pts:
        out: set[_Obj] = set()
        for obj in objs:
            if obj.kind == "box":
                out |= self.elements.get(obj, set())
            elif obj is EXT or obj is SELF:
                out.add(EXT)
            else:
                self._escape(frozenset({obj}), "iterated or unpacked", None, None)
        return frozenset(out)

    def _self_attr(self, attr: str, env: _Env) -> Pts:
        if attr in env.attrs:
            return env.attrs[attr]
        found = self.summary.get(attr)
        if found is not None:
            return frozenset(found)
        if attr in self.assigned:
            return NONE  # assigned by a method not yet analysed in this round
        return frozenset({EXT})  # assigned outside the scanned class, or a method

    # One branch per kind of expression node, each a few lines: a dispatch kept in one place
    # so that a kind left out is seen beside the others (hence its length).
    def _expr(self, node: object, env: _Env, fn: FunctionSource, method: str) -> Pts:
        if type(node) is cst.Name:
            if node.value in env.names:
                return env.names[node.value]
            return frozenset({EXT})
        if type(node) is cst.Attribute:
            receiver = self._expr(node.value, env, fn, method)
            attr = node.attr.value
            out: set[_Obj] = set()
            for obj in receiver:
                if obj is SELF:
                    if attr == "__dict__":
                        self.dynamic = "the class reads its own attributes through `__dict__`"
                    out |= self._self_attr(attr, env)
                elif obj.kind == "alloc":
                    self.reads.setdefault((obj, attr), []).append((fn, node, self.cur))
                    if attr.startswith("__"):
                        self._escape(frozenset({obj}), f"its `{attr}` is read", fn, node)
                    out |= self.fields.get((obj, attr), set())
                elif obj is EXT:
                    is_mode = self.ctx.profile.forward_batch_attrs.get(attr) == "mode"
                    out.add(MODE if is_mode else EXT)
            return frozenset(out)
        if type(node) is cst.Subscript:
            receiver = self._expr(node.value, env, fn, method)
            for index in node.slice:
                self._slice(index, env, fn, method)
            out = set()
            for obj in receiver:
                if obj.kind == "box":
                    out |= self.elements.get(obj, set())
                elif obj is EXT:
                    out.add(EXT)
                elif obj.kind == "alloc":
                    self._escape(frozenset({obj}), "subscripted", fn, node)
            return frozenset(out)
        if type(node) is cst.Call:
            return self._call(node, env, fn, method)
        if type(node) is cst.BooleanOperation:
            return self._expr(node.left, env, fn, method) | self._expr(node.right, env, fn, method)
        if type(node) is cst.IfExp:
            self._expr(node.test, env, fn, method)
            return self._expr(node.body, env, fn, method) | self._expr(node.orelse, env, fn, method)
        if type(node) is cst.Comparison:
            self._expr(node.left, env, fn, method)
            for target in node.comparisons:
                self._expr(target.comparator, env, fn, method)
            return NONE
        if isinstance(node, (cst.BinaryOperation,)):
            for side in (node.left, node.right):
                self._escape(self._expr(side, env, fn, method), "used in arithmetic", fn, node)
            return NONE
        if type(node) is cst.UnaryOperation:
            self._expr(node.expression, env, fn, method)
            return NONE
        if isinstance(node, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
            box = self.boxes.get(id(node))
            if box is None:
                box = self.boxes[id(node)] = _Obj("box", "", node, fn)
            for item in node.elements:
                if type(item) is cst.DictElement:
                    self._expr(item.key, env, fn, method)
                    self._add(self.elements, box, self._expr(item.value, env, fn, method))
                elif isinstance(item, (cst.StarredDictElement, cst.StarredElement)):
                    inner_items = self._expr(item.value, env, fn, method)
                    self._add(self.elements, box, self._elements_of(inner_items))
                else:
                    self._add(self.elements, box, self._expr(item.value, env, fn, method))
            return frozenset({box})
        if type(node) is cst.NamedExpr:
            value = self._expr(node.value, env, fn, method)
            self._assign(node.target, value, env, fn, method)
            return value
        if isinstance(
            node,
            (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString),
        ):
            return NONE
        if type(node) is cst.Await:
            return self._expr(node.expression, env, fn, method)
        if type(node) is cst.Lambda:
            # Its body reads what it names when it is called: read here, its parameters from
            # outside.
            inner = env.copy()
            for param in _lambda_params(node):
                inner.names[param] = frozenset({EXT})
            self._escape(self._expr(node.body, inner, fn, method), "returned by a lambda", fn, node)
            return frozenset({EXT})
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner = env.copy()
            clause: object = node.for_in
            while type(clause) is cst.CompFor:
                items = self._expr(clause.iter, inner, fn, method)
                self._assign(clause.target, self._elements_of(items), inner, fn, method)
                for cond in clause.ifs:
                    self._expr(cond.test, inner, fn, method)
                clause = clause.inner_for_in
            box = self.boxes.get(id(node))
            if box is None:
                box = self.boxes[id(node)] = _Obj("box", "", node, fn)
            if isinstance(node, cst.DictComp):
                self._expr(node.key, inner, fn, method)
                self._add(self.elements, box, self._expr(node.value, inner, fn, method))
            else:
                self._add(self.elements, box, self._expr(node.elt, inner, fn, method))
            return frozenset({box})
        self._captured(node, env, "an expression idxcheck does not follow uses it", fn)
        return frozenset({EXT})

    def _cond(
        self, node: object, env: _Env, fn: FunctionSource, method: str
    ) -> tuple[Modes, Modes]:
        """The modes of `env` in which the condition may be true, and those in which it may
        be false: tests of the forward mode (its predicates, `==`, `in`) narrow them; any
        other condition may be either."""
        modes = env.modes
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            true, false = self._cond(node.expression, env, fn, method)
            return false, true
        if type(node) is cst.BooleanOperation:
            lt, lf = self._cond(node.left, env, fn, method)
            rt, rf = self._cond(node.right, env, fn, method)
            if type(node.operator) is cst.And:
                return lt & rt, lf | (lt & rf)
            return lt | (lf & rt), lf & rf
        members = self._mode_test(node, env, fn, method)
        if members is None:
            return modes, modes
        return modes & members, modes - members

    def _mode_test(
        self, node: object, env: _Env, fn: FunctionSource, method: str
    ) -> frozenset[str] | None:
        """The modes in which a test of the forward mode holds, None if it is no such test
        (or one whose answer depends on more than the mode)."""
        if type(node) is cst.Call and type(node.func) is cst.Attribute:
            if self._expr(node.func.value, env, fn, method) != frozenset({MODE}):
                return None
            args: list[Formula] = []
            kwargs: dict[str, Formula] = {}
            for arg in node.args:
                flag = _bool_constant(arg.value)
                if flag is None:
                    return None
                if arg.keyword is not None:
                    kwargs[arg.keyword.value] = BoolConst(flag)
                else:
                    args.append(BoolConst(flag))
            formula = self.ctx.modes.call(node.func.attr.value, args, kwargs)
            if formula is None:
                return None
            holds: set[str] = set()
            for mode in self.all_modes:
                value = simplify_formula(specialise_formula(formula, mode))
                if value == TRUE:
                    holds.add(mode)
                elif value != FALSE:
                    return None
            return frozenset(holds)
        if type(node) is cst.Comparison and len(node.comparisons) == 1:
            target = node.comparisons[0]
            operator = target.operator
            if self._expr(node.left, env, fn, method) != frozenset({MODE}):
                return None
            named = self._members(target.comparator)
            if named is None:
                return None
            if isinstance(operator, (cst.Equal, cst.Is, cst.In)):
                return named
            if isinstance(operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
                return self.all_modes - named
        return None

    def _members(self, node: object) -> frozenset[str] | None:
        """`ForwardMode.X`, or a tuple, list or set of them: their names."""
        enum = self.ctx.modes.enum_name
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            if node.value.value == enum and node.attr.value in self.all_modes:
                return frozenset({node.attr.value})
            return None
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            found: set[str] = set()
            for element in node.elements:
                inner = self._members(element.value)
                if inner is None:
                    return None
                found |= inner
            return frozenset(found)
        return None

    # The kinds of callee (a method of the class or a scanned base, a function of the tree,
    # a constructor, a library call), tried in order, the first that resolves deciding: one
    # function so that the order stays visible (hence its length).
    def _call(self, node: cst.Call, env: _Env, fn: FunctionSource, method: str) -> Pts:
        func = node.func
        args = [(arg, self._expr(arg.value, env, fn, method)) for arg in node.args]
        # A method of the class or of a scanned base: the arguments are its parameters.
        callee: FunctionSource | None = None
        callee_name = ""
        if type(func) is cst.Attribute and type(func.value) is cst.Name:
            if func.value.value == "self" and "self" in env.names:
                callee_name = func.attr.value
                callee = self.methods.get(callee_name)
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Call
            and type(func.value.func) is cst.Name
            and func.value.func.value == "super"
        ):
            callee_name = func.attr.value
            # Every other definition of the name in the hierarchy: the one after the caller's
            # class is among them.
            targets = [k for k in self.by_name.get(callee_name, ()) if self.bodies[k] is not fn]
            if not targets:
                if callee_name != "__init__":
                    self._self_escape("", f"`super().{callee_name}` is outside the scanned tree")
                for arg, objs in args:
                    self._escape(objs, f"handed to `super().{callee_name}`", fn, arg)
                return frozenset({EXT})
            out: set[_Obj] = {EXT}
            for key in targets:
                self._add(self.method_modes, key, env.modes)
                self._bind(key, self.bodies[key], args)
                for attr in self.writes.get(key, ()):
                    env.attrs.pop(attr, None)
                out |= self.returns.get(key, set())
            return frozenset(out)
        if callee is not None:
            self._add(self.method_modes, callee_name, env.modes)
            self._bind(callee_name, callee, args)
            for attr in self.writes.get(callee_name, ()):
                env.attrs.pop(attr, None)
            return frozenset(self.returns.get(callee_name, set()) | {EXT})
        if callee_name:
            # `self.m(...)` for a method the scan does not hold (an attribute holding a
            # callable, a base outside the tree).
            if callee_name not in self.summary:
                self._self_escape("", f"`self.{callee_name}` is not a method of the scanned class")
                env.attrs.clear()
            for arg, objs in args:
                self._escape(objs, f"handed to `self.{callee_name}`", fn, arg)
            return frozenset({EXT})
        name = func.value if type(func) is cst.Name else ""
        if name == "getattr" and args:
            return self._getattr(node, args, fn)
        if name in ("hasattr",) or name in _INERT_CALLS:
            return NONE
        if name == "dict" and "dict" not in env.names:
            # A dict built by keywords: its values are read wherever the dict is.
            box = self.boxes.get(id(node))
            if box is None:
                box = self.boxes[id(node)] = _Obj("box", "", node, fn)
            for arg, objs in args:
                self._add(self.elements, box, self._elements_of(objs) if arg.star else objs)
            return frozenset({box})
        if name and self.ctx.dataclass_fields(name) is not None and name not in env.names:
            return self._construct(node, name, args, fn)
        receiver = NONE
        if type(func) is cst.Attribute:
            receiver = self._expr(func.value, env, fn, method)
            for obj in receiver:
                if obj.kind == "alloc":
                    self._escape(
                        frozenset({obj}), f"its method `{func.attr.value}` is called", fn, node
                    )
                elif obj.kind == "box" and func.attr.value in ("get", "pop", "setdefault"):
                    if func.attr.value == "setdefault" and len(args) > 1:
                        self._add(self.elements, obj, args[1][1])
                    return frozenset(self.elements.get(obj, set()))
                elif obj.kind == "box" and func.attr.value in ("values", "items"):
                    return frozenset({obj})
        else:
            self._expr(func, env, fn, method)
        for arg, objs in args:
            self._site_arg(fn, arg, node)
            if not any(o is SELF or o.kind in ("alloc", "box") for o in objs):
                continue  # nothing of the class's leaves here: no text to make
            what = _callee_text(fn, node)
            if SELF in objs:
                self._self_escape(name, f"the backend is handed to `{what}`")
            self._escape(objs, f"handed to `{what}`", fn, arg)
        return frozenset({EXT})

    def _site_arg(self, fn: FunctionSource, arg: cst.Arg, call: cst.Call) -> None:
        name = arg.keyword.value if arg.keyword is not None else ""
        self.sites.setdefault(id(arg), _Site(fn, arg, name, call=call))

    def _bind(self, name: str, callee: FunctionSource, args: list[tuple[cst.Arg, Pts]]) -> None:
        params = [*callee.node.params.posonly_params, *callee.node.params.params]
        # Past `self` (or `cls`); a static method's first parameter is its first argument.
        index = 1 if params and params[0].name.value in ("self", "cls") else 0
        for arg, objs in args:
            if arg.star:
                self._escape(objs, f"unpacked into `self.{name}`", callee, arg)
                continue
            if arg.keyword is not None:
                self._add(self.params, (name, arg.keyword.value), objs)
            else:
                self._add(self.params, (name, index), objs)
                index += 1

    def _getattr(self, node: cst.Call, args: list[tuple[cst.Arg, Pts]], fn: FunctionSource) -> Pts:
        objs = args[0][1]
        attr = _constant(args[1][0].value) if len(args) > 1 else None
        default = args[2][1] if len(args) > 2 else NONE
        if attr is None:
            if SELF in objs:
                self.dynamic = (
                    "the class reads its own attributes with `getattr` by a computed name"
                )
            self._escape(objs, "read with `getattr` by a computed name", fn, node)
            return frozenset({EXT})
        out: set[_Obj] = set(default)
        for obj in objs:
            if obj is SELF:
                out |= self.summary.get(attr, {EXT})
            elif obj.kind == "alloc":
                self.reads.setdefault((obj, attr), []).append((fn, node, self.cur))
                out |= self.fields.get((obj, attr), set())
            elif obj is EXT:
                out.add(EXT)
        return frozenset(out)

    def _construct(
        self, node: cst.Call, name: str, args: list[tuple[cst.Arg, Pts]], fn: FunctionSource
    ) -> Pts:
        obj = self.allocs.get(id(node))
        if obj is None:
            obj = self.allocs[id(node)] = _Obj("alloc", name, node, fn)
        order = self.ctx.dataclass_fields(name) or ()
        position = 0
        for arg, objs in args:
            if arg.star:
                self._escape(objs, f"unpacked into `{name}`", fn, arg)
                self._escape(
                    frozenset({obj}), f"built from unpacked arguments of `{name}`", fn, arg
                )
                continue
            if arg.keyword is not None:
                attr = arg.keyword.value
            else:
                attr = order[position] if position < len(order) else ""
                position += 1
            if attr:
                self._store(fn, arg, attr, (obj,))
                self._add(self.fields, (obj, attr), objs)
        return frozenset({obj})

    def _escape(
        self, objs: Iterable[_Obj], why: str, fn: FunctionSource | None, node: object
    ) -> None:
        for obj in objs:
            if obj.kind in ("alloc", "box"):
                self._record(obj, (why, fn, node, self.cur))

    def _record(self, obj: _Obj, entry: tuple[str, FunctionSource | None, object, Modes]) -> bool:
        """An escape of `obj` in the modes of `entry`; whether it adds a mode."""
        found = self.escaped.setdefault(obj, [])
        known: set[str] = set().union(*(e[3] for e in found)) if found else set()
        if entry[3] <= known:
            return False
        found.append(entry)
        return True

    def _self_escape(self, callee_class: str, why: str) -> None:
        entry = (callee_class, why, self.cur)
        if entry not in self.self_escapes:
            self.self_escapes.append(entry)

    def _captured(self, node: object, env: _Env, why: str, fn: FunctionSource) -> None:
        """Every object a name in `node` holds may be read there."""
        why = f"{why} (`{type(node).__name__}`)"
        for name in _names_in(node):
            objs = env.names.get(name)
            if objs:
                self._escape(objs, why, fn, node)
            if name == "self":
                for objs_of_attr in self.summary.values():
                    self._escape(objs_of_attr, why, fn, node)

    def _close(self) -> None:
        """What an escaped object holds escapes with it; so does what the backend holds when
        the backend itself reaches code the analysis does not see."""
        for callee_class, why, modes in self.self_escapes:
            for attr in self._held_by_self(callee_class):
                for obj in self._reachable(self.summary.get(attr, ())):
                    self._record(obj, (why, None, None, modes))
        outside = self._outside_bases()
        if outside:
            why = f"the base class `{outside}` is outside the scanned tree"
            for objs in self.summary.values():
                for obj in self._reachable(objs):
                    self._record(obj, (why, None, None, self.all_modes))
        pending = list(self.escaped)
        while pending:
            obj = pending.pop()
            inner: set[_Obj] = set(self.elements.get(obj, set()))
            for (owner, _), contents in self.fields.items():
                if owner is obj:
                    inner |= contents
            for held_obj in inner:
                if held_obj.kind not in ("alloc", "box"):
                    continue
                grew = False
                for entry in self.escaped[obj]:
                    grew = self._record(held_obj, entry) or grew
                if grew:
                    pending.append(held_obj)

    def _reachable(self, objs: Iterable[_Obj]) -> set[_Obj]:
        """The objects and containers `objs` hold, themselves included."""
        seen: set[_Obj] = set()
        pending = [o for o in objs if o.kind in ("alloc", "box")]
        while pending:
            obj = pending.pop()
            if obj in seen:
                continue
            seen.add(obj)
            pending.extend(o for o in self.elements.get(obj, ()) if o.kind in ("alloc", "box"))
            for (owner, _), held in self.fields.items():
                if owner is obj:
                    pending.extend(o for o in held if o.kind in ("alloc", "box"))
        return seen

    def _held_by_self(self, callee_class: str) -> list[str]:
        """The attributes of the backend that code handed the backend may read: all of them,
        unless that code is a class of the scanned tree, whose text names only some."""
        text = self._class_text(callee_class) if callee_class else None
        if text is not None:
            if "getattr(" in text or "__dict__" in text or "vars(" in text:
                return list(self.summary)
            return [a for a in self.summary if re.search(rf"\.{re.escape(a)}\b", text)]
        return list(self.summary)

    def _outside_bases(self) -> str:
        pending = [self.cls]
        seen: set[int] = set()
        while pending:
            cls = pending.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            for name in cls.base_names():
                if name in _INERT_BASES:
                    continue
                found = self.ctx.class_lookup(name, cls.file) if self.ctx.class_lookup else None
                if not isinstance(found, ClassSource):
                    return name
                pending.append(found)
        return ""

    # -- answers ---------------------------------------------------------------------------

    def consumer(self, binding: Binding, mode: str) -> Consumer | None:
        """Who reads the value `binding` binds in forward mode `mode`: a call, a read in the
        class, nothing (a note), or None where the analysis does not decide (the value
        counts as read)."""
        if mode not in self.all_modes:
            mode = ""  # no forward mode of its own: a use in any mode counts
        if binding.kind not in (BindingKind.ATTRIBUTE, BindingKind.KEYWORD, BindingKind.POSITIONAL):
            return None
        span = binding.loc.span
        site = self._site_at(span)
        if site is None:
            return None
        if site.call is not None:
            call = site.call
            assert type(call) is cst.Call
            return Consumer(
                "call",
                f"handed to `{_callee_text(site.fn, call)}({site.attr + '=' if site.attr else ''}...)`",
                span,
                _callee_name(call),
            )
        objs = site.objs
        if not objs or any(o.kind not in ("alloc",) for o in objs):
            return None
        if self.dynamic:
            return Consumer("escapes", self.dynamic)
        for obj in objs:
            escapes = [e for e in self.escaped.get(obj, ()) if not mode or mode in e[3]]
            if escapes:
                why, fn, node, _ = escapes[0]
                if fn is not None and node is not None:
                    span = fn.loc(node).span  # type: ignore[arg-type]
                    why += f" at {span.path}:{span.line}"
                return Consumer("escapes", f"the object holding it may be read elsewhere: {why}")
            why = self._read_in_dataclass(obj.cls_name, site.attr)
            if why:
                return Consumer("escapes", why)
            why = self._read_in_file(obj, site.attr)
            if why:
                return Consumer("escapes", why)
        reads = [
            r
            for obj in objs
            for r in self.reads.get((obj, site.attr), [])
            if not mode or mode in r[2]
        ]
        if reads:
            return self._describe(reads[0][0], reads[0][1], site.attr)
        classes = ", ".join(sorted({o.cls_name for o in objs}))
        return Consumer(
            "unread",
            f"no method of `{self.cls.name}` or of its scanned bases reads the field "
            f"`{site.attr}` of this `{classes}`"
            + (f" in {mode}" if mode else "")
            + ", and the object does not leave the class"
            + (" there" if mode else ""),
        )

    def _site_at(self, span: Span) -> _Site | None:
        for site in self.sites.values():
            fn = site.fn
            # Positions cost a pass over the function: only the one that holds the line.
            if fn.file.path != span.path or not fn.def_line <= span.line <= fn.end_line:
                continue
            found = fn.loc(site.node).span  # type: ignore[arg-type]
            if found == span:
                return site
        return None

    def _class_text(self, name: str) -> str | None:
        """The text of the class `name`: of this file's, else of the tree's (a lookup the
        cache records, so that an edit there analyses this file again)."""
        source = self.cls.file
        for block in source.blocks_named(name):
            if block.kind == "class":
                return source.block_text(block)
        found = self.ctx.class_lookup(name, source) if self.ctx.class_lookup else None
        if isinstance(found, ClassSource):
            return found.file.block_text(found.block)
        return None

    def _read_in_dataclass(self, name: str, attr: str) -> str:
        """Whether the dataclass's own methods may read the field (`__post_init__`, a
        property)."""
        text = self._class_text(name)
        if text is None:
            return f"the class `{name}` is not found to read its methods"
        if re.search(rf"self\.{re.escape(attr)}\b", text) or re.search(
            r"getattr\(|__dict__|vars\(|asdict\(|astuple\(|fields\(", text
        ):
            return f"the methods of `{name}` may read `{attr}`"
        return ""

    def _read_in_file(self, obj: _Obj, attr: str) -> str:
        """Whether another class or function of the same file reads an attribute of the
        backend that holds the object, and the field's name."""
        holders = [a for a, held in self.summary.items() if obj in self._reachable(held)]
        source = self.cls.file
        for block in source.blocks:
            if block.start_line == self.cls.block.start_line:
                continue
            if block.name in (self.cls.name,) or block.kind not in ("class", "def"):
                continue
            text = source.block_text(block)
            if not re.search(rf"\.{re.escape(attr)}\b|getattr\(", text):
                continue
            for holder in holders:
                if re.search(rf"(?<!self)\.{re.escape(holder)}\b", text):
                    return f"`{block.name}` in the same file reads `.{holder}` and `{attr}`"
        return ""

    def _describe(self, fn: FunctionSource, node: object, attr: str, depth: int = 0) -> Consumer:
        parents = self._parent_map(fn)
        child = node
        parent = parents.get(id(child))
        span = fn.loc(node).span  # type: ignore[arg-type]
        if type(parent) is cst.Arg:
            call = parents.get(id(parent))
            if type(call) is cst.Call:
                if parent.keyword is not None:
                    shown = f"{parent.keyword.value}=..."
                else:
                    position = next(i for i, a in enumerate(call.args) if a is parent)
                    shown = f"<argument {position + 1}>"
                return Consumer(
                    "call",
                    f"read by `{_callee_text(fn, call)}({shown})` at {span.path}:{span.line}",
                    span,
                    _callee_name(call),
                )
        if (
            depth < 2
            and type(parent) is cst.Assign
            and len(parent.targets) == 1
            and type(parent.targets[0].target) is cst.Name
        ):
            local = parent.targets[0].target.value
            for use in _name_uses(fn.node.body, local):
                found = self._describe(fn, use, attr, depth + 1)
                if found.status == "call":
                    return found
        return Consumer("read", f"read at {span.path}:{span.line}", span)

    def _parent_map(self, fn: FunctionSource) -> dict[int, object]:
        found = self._parents.get(id(fn))
        if found is None:
            found = {}
            pending: list[object] = [fn.node]
            while pending:
                item = pending.pop()
                for child in getattr(item, "children", ()):
                    found[id(child)] = item
                    pending.append(child)
            self._parents[id(fn)] = found
        return found


def _bool_constant(node: object) -> bool | None:
    if type(node) is cst.Name and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _constant(node: object) -> str | None:
    if type(node) is cst.SimpleString:
        text = node.value
        if (
            len(text) >= 2
            and text[0] == text[-1]
            and text[0] in "'\""
            and not text.startswith(("'''", '"""'))
        ):
            return text[1:-1]
    return None


def _lambda_params(node: cst.Lambda) -> list[str]:
    params = node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            names.append(star.name.value)
    return names


def _names_in(node: object) -> Iterator[str]:
    pending: list[object] = [node]
    while pending:
        item = pending.pop()
        if type(item) is cst.Name:
            yield item.value
        pending.extend(getattr(item, "children", ()))


def _name_uses(body: object, name: str) -> Iterator[object]:
    pending: list[object] = [body]
    while pending:
        item = pending.pop(0)
        if type(item) is cst.Name and item.value == name:
            yield item
        pending.extend(getattr(item, "children", ()))


def _callee_name(call: cst.Call) -> str:
    func = call.func
    while type(func) is cst.Subscript:  # a Triton launch: `kernel[grid](...)`
        func = func.value
    if type(func) is cst.Name:
        return func.value
    if type(func) is cst.Attribute:
        return func.attr.value
    return ""


def _callee_text(fn: FunctionSource, call: cst.Call) -> str:
    func = call.func
    while type(func) is cst.Subscript:
        func = func.value
    text = " ".join(fn.code(func).split())
    return text if len(text) <= 60 else text[:57] + "..."
