"""Facts per class: interpret `__init__` for the attribute environment, find the attributes a
class fills per forward, pick the entry points, interpret them, and keep the bindings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from idxcheck.interp.interpreter import ClassInterpreter
from idxcheck.interp.state import Binding, BufferAccess, ScanContext
from idxcheck.interp.values import BufferV, DictV, IntV, LayoutV, TupleV, Value
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.source.files import ClassSource, FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import Const

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


def analyse_class(cls: ClassSource, ctx: ScanContext) -> ClassFacts:
    methods, base_methods, bases = inherited(cls, ctx)
    facts = ClassFacts(cls.file.path, cls.name, bases=bases)
    attrs: dict[str, Value] = class_constants(
        cls, ctx, frozenset(ctx.profile.entry_width_bounds.values())
    )
    for attr, (reader, _) in ctx.profile.member_widths.items():
        # A member's bound holds where the class reads the attribute as it is (its reader
        # returns it); a reader of its own may decide otherwise at run time.
        read = methods.get(reader)
        if attr in attrs and (read is None or not _returns_attribute(read, attr)):
            del attrs[attr]

    init = methods.get("__init__")
    if init is not None:
        interp = ClassInterpreter(
            ctx, methods, cls.name, attrs=attrs, record=False, base_methods=base_methods
        )
        interp.run_collecting(init, attrs)
        facts.errors.extend(interp.errors)

    # Attributes written outside __init__ are per-forward state, except preallocations written
    # exactly once (in one method, one value), which later methods slice.
    collector = ClassInterpreter(
        ctx, methods, cls.name, attrs=attrs, record=False, base_methods=base_methods
    )
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
    # The methods that only write in place are run for the names they refill, which matter
    # only for the preallocations' names: none left to learn (most classes preallocate
    # nothing), none of these runs (bench/RESULTS.md, "What each change did", and "Measurements
    # that stood in code comments").
    consulted: set[str] = set()
    for attr, value in preallocated.items():
        _refill_names(attr, value, consulted)
    for name, fn in methods.items():
        if consulted <= collector.refilled:
            break
        if name != "__init__" and not _writes_self(fn) and _writes_in_place(fn):
            collector.run(fn, collector.entry_args(fn))
    for attr, value in preallocated.items():
        attrs[attr] = _unless_refilled(attr, value, collector.refilled)

    entries = entry_points(methods, ctx)
    facts.entries = [fn.name for fn in entries]
    runner = ClassInterpreter(
        ctx,
        methods,
        cls.name,
        attrs=attrs,
        forward_state_attrs=frozenset(forward_state),
        base_methods=base_methods,
    )
    for fn in entries:
        runner.run(fn, runner.entry_args(fn))
    facts.bindings = runner.bindings
    facts.accesses = runner.accesses
    facts.errors.extend(runner.errors)
    return facts


def _unless_refilled(name: str, value: Value, refilled: set[str]) -> Value:
    """A preallocated layout that the class also writes in place (a replay refills
    `cu_seqlens_q[: bs + 1]`) is a buffer: its initial content is not what kernels read."""
    if isinstance(value, LayoutV) and name in refilled:
        return BufferV(name, value.entries, value.loc, value.entries, Const(0))
    if isinstance(value, DictV):
        return DictV(tuple((k, _unless_refilled(k, v, refilled)) for k, v in value.items))
    if isinstance(value, TupleV):
        return TupleV(tuple(_unless_refilled(name, v, refilled) for v in value.items))
    return value


def _refill_names(name: str, value: Value, into: set[str]) -> None:
    """The names `_unless_refilled` looks up in the refilled set for `value` under `name`."""
    into.add(name)
    if isinstance(value, DictV):
        for key, item in value.items:
            _refill_names(key, item, into)
    elif isinstance(value, TupleV):
        for item in value.items:
            _refill_names(name, item, into)


_IN_PLACE = re.compile(r"\]\s*=[^=]|\.copy_\(")


def _writes_in_place(fn: FunctionSource) -> bool:
    return bool(_IN_PLACE.search(fn.raw_text()))


def analyse_function(fn: FunctionSource, ctx: ScanContext) -> ClassFacts:
    facts = ClassFacts(fn.file.path, fn.name, entries=[fn.name])
    interp = ClassInterpreter(ctx, {}, fn.name)
    interp.run(fn, interp.entry_args(fn))
    facts.bindings = interp.bindings
    facts.errors.extend(interp.errors)
    return facts


_SELF_WRITE = re.compile(r"self\.[A-Za-z_0-9]+\s*(\[[^\]]*\])?\s*=[^=]")


def _writes_self(fn: FunctionSource) -> bool:
    return bool(_SELF_WRITE.search(fn.raw_text()))


def class_constants(
    cls: ClassSource, ctx: ScanContext, names: frozenset[str], depth: int = 0
) -> dict[str, Value]:
    """The integer constants that the class body (or a base's in the scanned tree) assigns to
    `names` (`reorder_batch_threshold: int = 1`): what `self.<name>` reads until `__init__`
    assigns it."""
    found: dict[str, Value] = {}
    if not names:
        return found
    if depth < 6:
        for base_name in cls.base_names():
            base = ctx.class_lookup(base_name, cls.file) if ctx.class_lookup else None
            if isinstance(base, ClassSource) and base is not cls:
                for key, known in class_constants(base, ctx, names, depth + 1).items():
                    found.setdefault(key, known)
    body = cls.node.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            target: cst.BaseExpression | None = None
            value: cst.BaseExpression | None = None
            if isinstance(small, cst.AnnAssign):
                target, value = small.target, small.value
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            if not isinstance(target, cst.Name) or target.value not in names:
                continue
            member = ctx.profile.member_widths.get(target.value)
            if isinstance(value, cst.Integer):
                found[target.value] = IntV(Const(int(value.evaluated_value)))
            elif (
                member is not None
                and isinstance(value, cst.Attribute)
                and value.attr.value in member[1]
            ):
                # An enum member the profile bounds the width by (`AttentionCGSupport.NEVER`).
                found[target.value] = IntV(Const(member[1][value.attr.value]))
            else:
                found.pop(target.value, None)  # not a constant: not known
    return found


def _returns_attribute(fn: FunctionSource, attr: str) -> bool:
    """Whether the body of `fn` is (its docstring and) `return cls.<attr>` or `self.<attr>`."""
    body = fn.node.body
    statements = [
        st
        for st in (body.body if isinstance(body, cst.IndentedBlock) else ())
        if not (
            isinstance(st, cst.SimpleStatementLine)
            and len(st.body) == 1
            and isinstance(st.body[0], cst.Expr)
            and isinstance(st.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        )
    ]
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return False
    (small,) = statements[0].body if len(statements[0].body) == 1 else (None,)
    value = small.value if isinstance(small, cst.Return) else None
    return (
        isinstance(value, cst.Attribute)
        and value.attr.value == attr
        and isinstance(value.value, cst.Name)
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
        if isinstance(expr, cst.Name) and expr.value in ("staticmethod", "classmethod", "property"):
            return True
    params = fn.node.params.params
    return not params or params[0].name.value not in ("self",)
