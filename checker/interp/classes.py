"""Facts per class: interpret `__init__` for the attribute environment, find the attributes a
class fills per forward, pick the entry points, interpret them, and keep the bindings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from idxcheck.interp.enums import enum_member
from idxcheck.interp.fills import other_uses
from idxcheck.interp.handoffs import allocations_in, handoff_bindings
from idxcheck.interp.interpreter import ClassInterpreter
from idxcheck.interp.state import Binding, BufferAccess, ScanContext
from idxcheck.interp.stores import KeyedStores, Refills
from idxcheck.interp.values import (
    BoolV,
    BufferV,
    ClassRefV,
    DictV,
    IntV,
    LayoutV,
    NoneV,
    StrV,
    TupleV,
    Value,
)
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.source.files import ClassSource, FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import TRUE, BoolConst, Const, Term, strip

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

_SELF_CALL = re.compile(r"self\.([A-Za-z_][A-Za-z_0-9]*)\s*\(")


@dataclass
class ClassFacts:
    path: str
    name: str
    bindings: list[Binding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    bases: tuple[str, ...] = ()
    accesses: list[BufferAccess] = field(default_factory=list)
    # Preallocated buffers against the per-batch allocations handed to the same writers.
    handoffs: list[Binding] = field(default_factory=list)
    # The integer attributes `__init__` leaves (`self.num_draft_tokens`), by name: what a fix
    # may write the runtime's width as.
    int_attrs: dict[str, Term] = field(default_factory=dict)

    def access_bindings(self) -> list[Binding]:
        """Each buffer access as a binding of the buffer role: the end of the slice, which
        must stay within the allocation."""
        return [
            Binding(
                role=Role.BUFFER,
                name=access.buffer,
                value=IntV(access.end),
                pc=access.pc,
                loc=access.loc,
                function=access.function,
                chain=access.chain,
                kind=BindingKind.ACCESS,
                target_upper=access.capacity,
            )
            for access in self.accesses
        ]


def _resolvable_attribute(value: Value) -> bool:
    """Per-forward attributes whose value the interpreter may still use when read elsewhere:
    preallocated layouts and buffers (a stride fixed in `init_cuda_graph_state` and sliced per
    replay), not per-forward metadata objects."""
    if isinstance(value, (LayoutV, BufferV)):
        return True
    if isinstance(value, DictV):
        return any(isinstance(v, (LayoutV, BufferV)) for _, v in value.items)
    if isinstance(value, TupleV):
        return any(isinstance(v, (LayoutV, BufferV)) for v in value.items)
    return False


def inherited(
    cls: ClassSource, ctx: ScanContext, depth: int = 0
) -> tuple[dict[str, FunctionSource], dict[str, FunctionSource], tuple[str, ...]]:
    """The methods a class has (its own over its bases'), the methods `super()` reaches, and
    the names of all its bases, following bases found in the scanned tree."""
    own = dict(cls.methods)
    from_bases: dict[str, FunctionSource] = {}
    names: list[str] = []
    if depth < 6:
        for base_name in cls.base_names():
            names.append(base_name)
            base = ctx.class_lookup(base_name, cls.file) if ctx.class_lookup else None
            if not isinstance(base, ClassSource) or base is cls:
                continue
            base_methods, _, base_names = inherited(base, ctx, depth + 1)
            names.extend(base_names)
            for name, fn in base_methods.items():
                from_bases.setdefault(name, fn)
    methods = {**from_bases, **own}
    return methods, from_bases, tuple(dict.fromkeys(names))


def super_tables(
    cls: ClassSource,
    ctx: ScanContext,
    depth: int = 0,
    found: dict[tuple[str, str], dict[str, FunctionSource]] | None = None,
) -> dict[tuple[str, str], dict[str, FunctionSource]]:
    """For `cls` and each base of it in the scanned tree (by file and name), the methods
    `super()` reaches from a method of that class: those its own bases have."""
    found = {} if found is None else found
    key = (cls.file.path, cls.name)
    if key in found:
        return found
    found[key] = inherited(cls, ctx, depth)[1]
    if depth < 6:
        for base_name in cls.base_names():
            base = ctx.class_lookup(base_name, cls.file) if ctx.class_lookup else None
            if isinstance(base, ClassSource) and base is not cls:
                super_tables(base, ctx, depth + 1, found)
    return found


def class_defaults(cls: ClassSource, ctx: ScanContext, depth: int = 0) -> dict[str, Value]:
    """The constants the class body of `cls` or of a base in the scanned tree assigns
    (`dllm_attention = None`, `reorder_batch_threshold: int = 1`), the class's own over its
    bases': `self.x` where `__init__` leaves it unassigned. Only literals: anything else is left
    unknown (and hides a base's literal of the same name)."""
    found: dict[str, Value] = {}
    if depth < 6:
        for base_name in cls.base_names():
            base = ctx.class_lookup(base_name, cls.file) if ctx.class_lookup else None
            if isinstance(base, ClassSource) and base is not cls:
                for name, value in class_defaults(base, ctx, depth + 1).items():
                    found.setdefault(name, value)
    body = cls.node.body
    for line in body.body if type(body) is cst.IndentedBlock else ():
        if type(line) is not cst.SimpleStatementLine:
            continue
        for stmt in line.body:
            if type(stmt) is cst.Assign and len(stmt.targets) == 1:
                target, expression = stmt.targets[0].target, stmt.value
            elif type(stmt) is cst.AnnAssign and stmt.value is not None:
                target, expression = stmt.target, stmt.value
            elif type(stmt) is cst.AnnAssign and type(stmt.target) is cst.Name:
                chosen = _declared_class(stmt.annotation.annotation)
                if chosen is not None:
                    found.setdefault(stmt.target.value, chosen)
                continue
            else:
                continue
            if type(target) is not cst.Name:
                continue
            literal = _literal(expression)
            if literal is None and type(expression) is cst.Name and expression.value[:1].isupper():
                # A class the body names (`metadata_cls = Mamba2Metadata`): called, it builds
                # that class (its fields by position where the tree declares it a dataclass,
                # else its keywords alone).
                literal = ClassRefV(expression.value)
            member = ctx.profile.member_widths.get(target.value)
            if (
                literal is None
                and member is not None
                and type(expression) is cst.Attribute
                and expression.attr.value in member[1]
            ):
                # An enum member the profile bounds the width by (`AttentionCGSupport.NEVER`).
                literal = IntV(Const(member[1][expression.attr.value]))
            elif literal is None and member is None:
                # A member of a plain enum of the tree (`QueryLenSupport.SINGLE_ONLY`).
                literal = enum_member(expression, cls.file, ctx)
            if literal is not None:
                found[target.value] = literal
            else:
                found.pop(target.value, None)  # not a literal: not known, a base's value neither
    return found


def _declared_class(annotation: cst.BaseExpression) -> ClassRefV | None:
    """`metadata_cls: type[M]` declared without a value: a class each subclass chooses. Called
    in the class that declares it, it builds an object of that class from its keywords (the
    positional arguments, whose fields the subclass's class decides, are not mapped)."""
    if not (type(annotation) is cst.Subscript and type(annotation.value) is cst.Name):
        return None
    if annotation.value.value not in ("type", "Type") or len(annotation.slice) != 1:
        return None
    element = annotation.slice[0].slice
    if type(element) is cst.Index and type(element.value) is cst.Name:
        return ClassRefV(element.value.value)
    return None


def _literal(node: cst.BaseExpression) -> Value | None:
    if type(node) is cst.Name and node.value in ("None", "True", "False"):
        return NoneV() if node.value == "None" else BoolV(BoolConst(node.value == "True"))
    if type(node) is cst.Integer:
        return IntV(Const(int(node.evaluated_value)))
    if type(node) is cst.SimpleString:
        evaluated = node.evaluated_value
        return StrV(evaluated) if isinstance(evaluated, str) else None
    return None


def analyse_class(cls: ClassSource, ctx: ScanContext) -> ClassFacts:
    methods, base_methods, bases = inherited(cls, ctx)
    supers = super_tables(cls, ctx) if bases else {}
    facts = ClassFacts(cls.file.path, cls.name, bases=bases)
    # Class-level constants stand where `__init__` does not assign the attribute.
    attrs: dict[str, Value] = class_defaults(cls, ctx)
    for attr, (reader, _) in ctx.profile.member_widths.items():
        # A member's bound holds where the class reads the attribute as it is (its reader
        # returns it); a reader of its own may decide otherwise at run time.
        read = methods.get(reader)
        if attr in attrs and (read is None or not _returns_attribute(read, attr)):
            del attrs[attr]

    def unrecorded() -> ClassInterpreter:
        """An interpreter of the class that records no site: for `__init__` and the writes."""
        return ClassInterpreter(
            ctx,
            methods,
            cls.name,
            attrs=attrs,
            record=False,
            base_methods=base_methods,
            supers=supers,
        )

    init = methods.get("__init__")
    if init is not None:
        interp = unrecorded()
        interp.run_collecting(init, attrs)
        facts.errors.extend(interp.errors)

    # Attributes written outside __init__ are per-forward state, except preallocations written
    # exactly once (in one method, one value), which later methods slice.
    collector = unrecorded()
    written: dict[str, list[Value]] = {}
    # The attributes that bound a phase's width (`Profile.entry_width_bounds`) are set at
    # construction, also by the helpers only `__init__` calls (vLLM's
    # `_init_reorder_batch_threshold`); other writes of such helpers stay per-forward state.
    bounds = frozenset(ctx.profile.entry_width_bounds.values())
    building = construction_methods(methods, ctx, base_methods) if bounds else frozenset()
    for name, fn in methods.items():
        if name == "__init__" or not _writes_self(fn):
            continue
        collector.self_writes = {}
        collector.run(fn, collector.entry_args(fn))
        for attr, values in collector.self_writes.items():
            if name in building and attr in bounds:
                continue
            written.setdefault(attr, []).extend(values)
    preallocated: dict[str, Value] = {}
    forward_state: set[str] = set()
    for attr, values in written.items():
        distinct = list(dict.fromkeys(values))
        if len(distinct) == 1 and _resolvable_attribute(distinct[0]):
            preallocated[attr] = distinct[0]
        else:
            forward_state.add(attr)
            attrs.pop(attr, None)
    # Refills and entries stored per key are read with the preallocations known, so that a
    # write in place resolves to the buffer it reaches (its allocation) and a replay reads
    # what capture stored under its batch size.
    refills, stores = _refills_and_stores(
        ctx,
        methods,
        cls.name,
        {**attrs, **preallocated},
        forward_state,
        base_methods,
        collector,
        supers,
    )
    for attr, value in preallocated.items():
        attrs[attr] = refills.apply(attr, value)

    entries = entry_points(methods, ctx)
    facts.entries = [fn.name for fn in entries]
    runner = ClassInterpreter(
        ctx,
        methods,
        cls.name,
        attrs=attrs,
        forward_state_attrs=frozenset(forward_state),
        base_methods=base_methods,
        stores=stores.mapped(refills),
        supers=supers,
    )
    for fn in entries:
        runner.run(fn, runner.entry_args(fn))
    facts.bindings = runner.bindings
    facts.accesses = runner.accesses
    facts.handoffs = handoff_bindings(
        runner.handoffs,
        ctx.profile.capture_flag,
        allocations_in(list(attrs.values())),
        ctx.profile.eager_entries,
    )
    facts.int_attrs = {
        name: strip(value.term) for name, value in attrs.items() if isinstance(value, IntV)
    }
    facts.errors.extend(runner.errors)
    return facts


def _refills_and_stores(
    ctx: ScanContext,
    methods: dict[str, FunctionSource],
    class_name: str,
    attrs: dict[str, Value],
    forward_state: set[str],
    base_methods: dict[str, FunctionSource],
    collector: ClassInterpreter,
    supers: dict[tuple[str, str], dict[str, FunctionSource]],
) -> tuple[Refills, KeyedStores]:
    """The buffers the class writes in place and the entries it stores per key, read by running
    the methods that write so with the preallocated attributes known (those that store entries
    first, so that a refill through a stored entry resolves too). A class that preallocates
    no layout and stores no entry has none of either to learn (most classes): nothing runs
    again, and the names its writes in place were seen under are kept."""
    # A method that reaches a base's through `super()` (at any depth) stores what that one
    # stores.
    reaches_store = _SuperStores(methods, base_methods, supers)
    storing = [
        fn
        for name, fn in methods.items()
        if name != "__init__" and (_stores_entries(fn) or reaches_store(fn))
    ]
    if not storing and not any(_holds_layout(v) for v in attrs.values()):
        return Refills(names=dict.fromkeys(collector.refilled, TRUE)), KeyedStores()
    resolver = ClassInterpreter(
        ctx,
        methods,
        class_name,
        attrs=attrs,
        forward_state_attrs=frozenset(forward_state),
        record=False,
        base_methods=base_methods,
        supers=supers,
    )
    for fn in storing:
        resolver.run(fn, resolver.entry_args(fn))
    stores = resolver.stores
    if stores.fills:
        # A list the class also changes otherwise holds more than what its loops append.
        for attr, reason in other_uses(methods.values(), set(stores.fills)).items():
            stores.refuse(attr, reason)
    # Refills are read again once the stores are complete.
    reader = ClassInterpreter(
        ctx,
        methods,
        class_name,
        attrs=attrs,
        forward_state_attrs=frozenset(forward_state),
        record=False,
        base_methods=base_methods,
        stores=stores,
        supers=supers,
    )
    for name, fn in methods.items():
        if name != "__init__" and _writes_in_place(fn):
            reader.run(fn, reader.entry_args(fn))
    return reader.refills, stores


def _holds_layout(value: Value) -> bool:
    if isinstance(value, LayoutV):
        return True
    if isinstance(value, DictV):
        return any(_holds_layout(v) for _, v in value.items)
    if isinstance(value, TupleV):
        return any(_holds_layout(v) for v in value.items)
    return False


_IN_PLACE = re.compile(r"\]\s*=[^=]|\.(?:copy_|fill_|zero_|index_copy_|scatter_|masked_fill_)\(")
_STORES_ENTRY = re.compile(
    r"self\.[A-Za-z_0-9]+\s*\[[^\]:]*\]\s*=[^=]|self\.[A-Za-z_0-9]+\s*\.\s*append\("
)


_SUPER_CALL = re.compile(r"\bsuper\(\s*\)\s*\.\s*([A-Za-z_][A-Za-z_0-9]*)?")


class _SuperStores:
    """Whether a method reaches, through `super()`, code that stores entries per key: the
    base's method that `super().name(...)` reaches (as the interpreter resolves it) stores, or
    one that it reaches in turn through `super()` or through `self.name(...)` does. Read from
    the texts, as `_stores_entries` reads a method's own."""

    def __init__(
        self,
        methods: dict[str, FunctionSource],
        base_methods: dict[str, FunctionSource],
        supers: dict[tuple[str, str], dict[str, FunctionSource]],
    ) -> None:
        self._methods = methods
        self._base_methods = base_methods
        self._supers = supers
        self._memo: dict[int, list[FunctionSource]] = {}

    def __call__(self, fn: FunctionSource) -> bool:
        # Every method reachable from `fn`'s `super()` calls, walked once (calls may cycle).
        seen: set[int] = set()
        todo = self._reached_by_super(fn)
        while todo:
            other = todo.pop()
            if id(other) in seen:
                continue
            seen.add(id(other))
            if _stores_entries(other):
                return True
            todo.extend(self._called(other))
        return False

    def _reached_by_super(self, fn: FunctionSource) -> list[FunctionSource]:
        """The methods `fn`'s `super()` calls reach: those of its class's bases, as
        `ClassInterpreter._super_methods` finds them."""
        table = self._base_methods
        if fn.owner is not None:
            table = self._supers.get((fn.file.path, fn.owner), table)
        reached: list[FunctionSource] = []
        for name in dict.fromkeys(m.group(1) for m in _SUPER_CALL.finditer(fn.raw_text())):
            if name is None:  # `super()` used otherwise than by a method's name
                return list(table.values())
            found = table.get(name)
            if found is not None:
                reached.append(found)
        return reached

    def _called(self, fn: FunctionSource) -> list[FunctionSource]:
        """What `fn` may call in turn: through `super()`, and through `self` (the method of
        that name that the class has, its own or a base's)."""
        key = id(fn)
        if key not in self._memo:
            called = self._reached_by_super(fn)
            for name in dict.fromkeys(_SELF_CALL.findall(fn.raw_text())):
                own = self._methods.get(name)
                if own is not None:
                    called.append(own)
            self._memo[key] = called
        return list(self._memo[key])


def _stores_entries(fn: FunctionSource) -> bool:
    return bool(_STORES_ENTRY.search(fn.raw_text()))


def _writes_in_place(fn: FunctionSource) -> bool:
    return bool(_IN_PLACE.search(fn.raw_text()))


def analyse_function(fn: FunctionSource, ctx: ScanContext) -> ClassFacts:
    facts = ClassFacts(fn.file.path, fn.name, entries=[fn.name])
    interp = ClassInterpreter(ctx, {}, fn.name)
    interp.run(fn, interp.entry_args(fn))
    facts.bindings = interp.bindings
    facts.handoffs = handoff_bindings(interp.handoffs, ctx.profile.capture_flag)
    facts.errors.extend(interp.errors)
    return facts


_SELF_WRITE = re.compile(r"self\.[A-Za-z_0-9]+\s*(\[[^\]]*\])?\s*=[^=]")


def _writes_self(fn: FunctionSource) -> bool:
    return bool(_SELF_WRITE.search(fn.raw_text()))


def _returns_attribute(fn: FunctionSource, attr: str) -> bool:
    """Whether the body of `fn` is (its docstring and) `return cls.<attr>` or `self.<attr>`."""
    body = fn.node.body
    statements = [
        st
        for st in (body.body if type(body) is cst.IndentedBlock else ())
        if not (
            type(st) is cst.SimpleStatementLine
            and len(st.body) == 1
            and type(st.body[0]) is cst.Expr
            and isinstance(st.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        )
    ]
    if len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine:
        return False
    (small,) = statements[0].body if len(statements[0].body) == 1 else (None,)
    value = small.value if type(small) is cst.Return else None
    return (
        type(value) is cst.Attribute
        and value.attr.value == attr
        and type(value.value) is cst.Name
        and value.value.value in ("cls", "self")
    )


def construction_methods(
    methods: dict[str, FunctionSource],
    ctx: ScanContext,
    base_methods: dict[str, FunctionSource] | None = None,
) -> frozenset[str]:
    """Private methods only `__init__` calls (directly, from the base's `__init__` that
    `super().__init__()` runs, or through other such methods): they run at construction, like
    `__init__` itself (vLLM's `_init_reorder_batch_threshold`)."""
    callers: dict[str, set[str]] = {}
    texts = [(name, fn) for name, fn in methods.items()]
    base_init = (base_methods or {}).get("__init__")
    if base_init is not None and base_init is not methods.get("__init__"):
        texts.append(("__init__", base_init))
    for name, fn in texts:
        for match in _SELF_CALL.finditer(fn.raw_text()):
            if match.group(1) != name:
                callers.setdefault(match.group(1), set()).add(name)
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, by in callers.items():
            if (
                name in found
                or name not in methods
                or not name.startswith("_")
                or name.startswith("__")
                or name in ctx.profile.entry_points
            ):
                continue
            if by <= {"__init__"} | found:
                found.add(name)
                changed = True
    return frozenset(found)


def entry_points(methods: dict[str, FunctionSource], ctx: ScanContext) -> list[FunctionSource]:
    """Methods the runtime calls: public ones, the profile's entry points, and private ones no
    other method calls. A helper called by another method gets its modes from its callers."""
    called: set[str] = set()
    for name, fn in methods.items():
        for match in _SELF_CALL.finditer(fn.raw_text()):
            if match.group(1) != name:
                called.add(match.group(1))
    entries: list[FunctionSource] = []
    for name, fn in methods.items():
        if name == "__init__" or _is_static(fn):
            continue
        if name in ctx.profile.entry_points or not name.startswith("_") or name not in called:
            entries.append(fn)
    return entries


def _is_static(fn: FunctionSource) -> bool:
    for deco in fn.node.decorators:
        expr = deco.decorator
        if type(expr) is cst.Name and expr.value in ("staticmethod", "classmethod", "property"):
            return True
    params = fn.node.params.params
    return not params or params[0].name.value not in ("self",)
