"""A small abstract interpreter for backend methods.

It walks a method's libcst tree with an environment of abstract values (`values.py`) and a
path condition, forks at `if`/`elif`/`else` and conditional expressions, joins with
if-then-else terms, follows early returns, and inlines helpers of the same class, so that a
site inside a helper gets the forward modes of its call sites. Whenever a value is bound to a
name with an index-pointer or grid-scalar role (a local, an attribute, a keyword, a dataclass
field, a dict key, a slice write, a `.copy_()` target) it records a `Binding`; the rules turn
bindings into obligations.

What it cannot model becomes `UnknownV(reason)`, never a guess."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from idxcheck.interp import functions, library
from idxcheck.interp.choices import (
    SELF_PREFIX,
    iter_choice,
    map_choice,
    merge,
    merge_alternatives,
    merged_self_part,
    self_part,
)
from idxcheck.interp.destinations import (
    NONE as NO_DESTINATIONS,
)
from idxcheck.interp.destinations import (
    CallDestinations,
    Destination,
    callee_name,
    destinations,
    keyword_text,
)
from idxcheck.interp.enums import enum_member
from idxcheck.interp.fills import (
    LOOP_PREFIX,
    FillLoop,
    appended_attr,
    classify_appends,
    range_count,
)
from idxcheck.interp.library import torch
from idxcheck.interp.library.call import Call, length_of, length_of_value, short_text
from idxcheck.interp.library.torch import IN_PLACE_METHODS, RUNTIME_TENSOR_METHODS
from idxcheck.interp.splits import split_threshold, uniform_split
from idxcheck.interp.state import (
    RUNTIME_ATOM,
    AlgorithmOracle,
    Binding,
    BufferAccess,
    EvaluationLimit,
    Frame,
    Handoff,
    ScanContext,
    State,
)
from idxcheck.interp.stores import KeyedStores, LoopFill, Refills
from idxcheck.interp.values import (
    AlgorithmEnumV,
    AlgorithmV,
    BoolV,
    BoundMethodV,
    BufferV,
    ChoiceV,
    ClassRefV,
    ConfigV,
    ConstVecV,
    CurrentModeV,
    DictV,
    FunctionRefV,
    IntV,
    LayoutV,
    MemberV,
    ModeEnumV,
    ModuleV,
    NoneV,
    ObjectV,
    RankCountsV,
    RuntimeV,
    SelfV,
    StrV,
    SuperV,
    TupleV,
    UnboundV,
    UnknownV,
    Value,
)
from idxcheck.model.kinds import ALGORITHM_ATOM, WORKER_ATOM, WORKER_TEXT, BindingKind, Role
from idxcheck.model.spans import Loc
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.source.modules import file_imports, module_constant
from idxcheck.sym import poly
from idxcheck.sym.terms import (
    FALSE,
    PADDED_PREFIX,
    TRUE,
    Atom,
    BoolConst,
    Const,
    Formula,
    ModeIs,
    Rewriter,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    Tagged,
    Term,
    Unknown,
    binop,
    cmp,
    conj,
    const_value,
    disj,
    ite,
    neg,
    relative_to,
    specialise_formula,
    stable_hash,
    strip,
    term_leaves,
    term_size,
    untag,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")
MAX_INLINE_DEPTH = 8
# Integer literals' values by their text: interned nodes, so the one a literal evaluates to is
# the one its text makes anyway; a cold scan of SGLang 0.5.23 evaluates 107,000 literals of 78
# texts.
_INTEGERS: dict[str, IntV] = {}
MAX_TERM_SIZE = 4000

KNOWN_MODULES = {
    "dataclasses": "dataclasses",
    "torch": "torch",
    "np": "np",
    "numpy": "numpy",
    "triton": "triton",
    "math": "math",
    "F": "F",
}
BUILTINS = frozenset(
    {
        "max",
        "min",
        "int",
        "len",
        "getattr",
        "hasattr",
        "isinstance",
        "range",
        "sum",
        "abs",
        "bool",
        "list",
        "tuple",
        "print",
        "any",
        "all",
        "float",
        "str",
        "enumerate",
        "zip",
        "sorted",
        "dict",
        "super",
        "type",
        "id",
        "round",
    }
)


# Methods of an elementwise comparison (a mask tensor) that count its true entries.
MASK_COUNTS = frozenset({"sum", "count_nonzero"})


def none_atom(path: str) -> Atom:
    """The condition that the runtime value at `path` is None: one atom wherever it is tested."""
    return Atom(f"none:{path}", f"{path} is None")


def batch_field_path(profile: Profile, attr: str) -> str:
    """The path of the forward batch's field `attr` as `runtime_attribute` reads it: the
    field's own name where the profile gives it a kind, else under `forward_batch`."""
    return attr if attr in profile.forward_batch_attrs else f"forward_batch.{attr}"


class ClassInterpreter:
    """Interprets the methods of one class."""

    def __init__(
        self,
        ctx: ScanContext,
        methods: dict[str, FunctionSource],
        class_name: str,
        attrs: dict[str, Value] | None = None,
        forward_state_attrs: frozenset[str] = frozenset(),
        record: bool = True,
        base_methods: dict[str, FunctionSource] | None = None,
        stores: KeyedStores | None = None,
        supers: dict[tuple[str, str], dict[str, FunctionSource]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.profile = ctx.profile
        self.methods = methods
        self.class_name = class_name
        self.attrs: dict[str, Value] = dict(attrs or {})
        self.forward_state_attrs = forward_state_attrs
        self.record = record
        self.base_methods = base_methods or {}
        # What `super()` reaches from a method of each class of the hierarchy, by the class's
        # file and name: from a base's method, the bases of that base.
        self.supers = supers or {}
        self.bindings: list[Binding] = []
        self.self_writes: dict[str, list[Value]] = {}
        # Names of tensors written in place (`x[: bs + 1] = ...`, `x.copy_(...)`): buffers that
        # are refilled, whose preallocated content is not what a kernel finally reads.
        self.refilled: set[str] = set()
        # The same writes by the buffer they reach (its allocation), where that resolves.
        self.refills = Refills()
        # Entries stored per key in dict attributes (`self.graph_meta[bs] = meta`): those of
        # the class's other methods when given, else those this interpreter records.
        self.stores = stores if stores is not None else KeyedStores()
        self.record_stores = stores is None
        # The appends of the loops being interpreted (by the id of the call): None where a
        # loop gives entry k of the list to iteration k, else why not; and the loop whose
        # body is being run for its entries, its variable a symbol.
        self._appends: dict[int, tuple[cst.Call, str | None]] = {}
        self._filling: FillLoop | None = None
        self.accesses: list[BufferAccess] = []
        # Tensors handed whole to writers (kernels, functions of the tree, `.copy_`).
        self.handoffs: list[Handoff] = []
        self.errors: list[str] = []
        self._active: list[str] = []
        self.tree_calls: list[FunctionSource] = []  # functions of the tree being followed

    # -- entry -----------------------------------------------------------------------------

    def run(
        self, fn: FunctionSource, args: dict[str, Value], pc: Formula = TRUE
    ) -> tuple[Value, Formula]:
        frame = Frame(fn, (fn.qualname,), 0)
        return self._run_frame(frame, args, pc)

    def run_collecting(self, fn: FunctionSource, attrs: dict[str, Value]) -> None:
        """Run `fn` (`__init__`) and store the `self` attributes it leaves into `attrs`; what
        `attrs` holds already (class-level constants) is the value where `fn` assigns none."""
        frame = Frame(fn, (fn.qualname,), 0)
        before = {SELF_PREFIX + k: v for k, v in attrs.items()}
        self._run_frame(frame, {**before, **self.entry_args(fn)}, TRUE)
        for key, value in merged_self_part(frame.exits, before).items():
            if isinstance(value, IntV):
                value = IntV(strip(value.term))
            attrs[key[len(SELF_PREFIX) :]] = value

    def entry_args(self, fn: FunctionSource) -> dict[str, Value]:
        args: dict[str, Value] = {}
        params = fn.node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            name = param.name.value
            if name in ("self", "cls"):
                args[name] = SelfV()
            elif fn.name == "__init__":
                args[name] = self._init_param(name)
            else:
                args[name] = self.entry_param(name, fn)
        return args

    def _init_param(self, name: str) -> Value:
        symbol = self.profile.init_param_symbols.get(name)
        if symbol is not None:
            return IntV(Sym(symbol))
        if name in self.profile.config_object_names:
            return ConfigV(name)
        if name in self.profile.worker_flags:
            # A constructor flag (`is_draft_worker=...`): the worker that builds the backend.
            return BoolV(Atom(WORKER_ATOM, WORKER_TEXT))
        return RuntimeV(name, None)

    def entry_param(self, name: str, fn: FunctionSource) -> Value:
        kind = self.profile.entry_params.get(name)
        if kind is None:
            return UnknownV(
                f"parameter `{name}` of `{fn.qualname}`, whose callers are not in the class"
            )
        return self.runtime_value(kind, name, fn.loc(fn.node.name))

    def runtime_value(self, kind: str, path: str, loc: Loc | None = None) -> Value:
        if kind in ("tensor_qo", "max_width"):
            return self._uniform_runtime(kind, path, loc)
        if kind == "forward_batch":
            return RuntimeV("forward_batch")
        if kind == "mode":
            return CurrentModeV()
        if kind == "bs":
            return IntV(Sym("bs"))
        if kind == "max_bs":
            return IntV(Sym("max_bs"))
        if kind == "num_tokens":
            return IntV(binop("*", Sym("bs"), RuntimeWidth()))
        if kind == "max_num_tokens":
            # What the runner that owns the backend passes: its largest batch times its width.
            return IntV(binop("*", Sym("max_bs"), RuntimeWidth()))
        if kind == "tensor_bs":
            return RuntimeV(path, Sym("bs"))
        if kind == "tensor_tokens":
            return RuntimeV(path, binop("*", Sym("bs"), RuntimeWidth()))
        if kind == "tensor":
            return RuntimeV(path, None)
        return RuntimeV(path, None)

    def _uniform_modes(self) -> frozenset[str]:
        """The modes in which every request carries the runtime width: those with a width per
        request (the profile's widths), but the modes that pack."""
        return frozenset(
            m for m in self.profile.default_widths if m not in self.profile.packed_modes
        )

    def _uniform_runtime(self, kind: str, path: str, loc: Loc | None) -> Value:
        """The runtime's own query index pointer (`tensor_qo`) or its widest request
        (`max_width`): in a mode with a width per request (the profile's widths, but packed
        modes) every request carries the runtime width, elsewhere the lengths are the
        runtime's."""
        entries = binop("+", Sym("bs"), Const(1))
        other: Value = RuntimeV(path, entries if kind == "tensor_qo" else None)
        uniform = self._uniform_modes()
        if not uniform or (kind == "tensor_qo" and loc is None):
            return other
        value: Value
        if kind == "tensor_qo":
            assert loc is not None
            value = LayoutV(Const(0), RuntimeWidth(), entries, loc, path, "runtime")
        else:
            value = IntV(RuntimeWidth())
        is_uniform = ModeIs(uniform)
        return ChoiceV(((is_uniform, value), (neg(is_uniform), other)))

    # -- frames ----------------------------------------------------------------------------

    def _run_frame(
        self, frame: Frame, args: dict[str, Value], pc: Formula
    ) -> tuple[Value, Formula]:
        state = State(dict(args), conj(pc, *self._entry_phase(frame.fn, args)))
        self._active.append(frame.fn.qualname)
        try:
            body = frame.fn.node.body
            state = self.exec_suite(body, state, frame)
        except RecursionError:
            self.errors.append(f"{frame.fn.qualname}: expression nested too deeply to interpret")
            frame.returns.append((pc, UnknownV("expression nested too deeply to interpret")))
            state.alive = False
        except EvaluationLimit as exc:
            self.errors.append(f"{frame.fn.qualname}: {exc}")
            frame.returns.append((pc, UnknownV(str(exc))))
            state.alive = False
        finally:
            self._active.pop()
        if state.alive:
            frame.returns.append((state.pc, NoneV()))
            frame.exits.append((state.pc, self_part(state.env)))
        if not frame.returns:
            return NoneV(), FALSE
        # Each exit's condition relative to the entry's: the caller is on the entry path
        # already, and full path conditions inside if-then-else terms would grow without end.
        value = merge_alternatives([(relative_to(p, pc), v) for p, v in frame.returns])
        pcs = [p for p, _ in frame.returns]
        out_pc = pc if all(p == pc for p in pcs) else disj(*pcs)
        return value, out_pc

    def _entry_phase(self, fn: FunctionSource, args: dict[str, Value]) -> list[Formula]:
        """What the profile says of a method whatever its body tests (`Profile.entry_modes`):
        the modes it runs in, and the bound its class sets on a request's query tokens there
        (where that bound is modelled)."""
        modes = self.profile.entry_modes.get(fn.name)
        if modes is None or fn.owner is None:
            return []
        found: list[Formula] = [ModeIs(frozenset(modes))]
        attr = self.profile.entry_width_bounds.get(fn.name)
        bound = None
        if attr is not None:
            bound = args.get(SELF_PREFIX + attr, self.attrs.get(attr))
        if isinstance(bound, IntV) and not any(
            isinstance(leaf, (Unknown, RuntimeInt)) for leaf in term_leaves(bound.term)
        ):
            found.append(cmp("<=", RuntimeWidth(), strip(bound.term)))
        return found

    # -- statements ------------------------------------------------------------------------

    def exec_suite(self, suite: cst.BaseSuite, state: State, frame: Frame) -> State:
        if type(suite) is cst.SimpleStatementSuite:
            return self.exec_smalls(suite.body, state, frame)
        assert type(suite) is cst.IndentedBlock
        return self.exec_statements(suite.body, state, frame)

    def exec_statements(
        self, stmts: Sequence[cst.BaseStatement], state: State, frame: Frame
    ) -> State:
        for stmt in stmts:
            if not state.alive:
                break
            state = self.exec_statement(stmt, state, frame)
        return state

    def exec_smalls(
        self, smalls: Sequence[cst.BaseSmallStatement], state: State, frame: Frame
    ) -> State:
        """The statements of one line (`a = 1; b = 2`), until one ends the path."""
        for small in smalls:
            if not state.alive:
                break
            state = self.exec_small(small, state, frame)
        return state

    def exec_statement(self, stmt: cst.BaseStatement, state: State, frame: Frame) -> State:
        if type(stmt) is cst.SimpleStatementLine:
            return self.exec_smalls(stmt.body, state, frame)
        if type(stmt) is cst.If:
            return self.exec_if(stmt, state, frame)
        if isinstance(stmt, (cst.For, cst.While)):
            return self.exec_loop(stmt, state, frame)
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            return self.exec_try(stmt, state, frame)
        if type(stmt) is cst.With:
            for item in stmt.items:
                value = self.eval(item.item, state, frame)
                if item.asname is not None:
                    self.assign_target(
                        item.asname.name,
                        RuntimeV("context") if value else value,
                        state,
                        frame,
                        None,
                    )
            return self.exec_suite(stmt.body, state, frame)
        if type(stmt) is cst.FunctionDef:
            state.env[stmt.name.value] = UnknownV(f"nested function `{stmt.name.value}`")
            return state
        if type(stmt) is cst.ClassDef:
            state.env[stmt.name.value] = UnknownV(f"nested class `{stmt.name.value}`")
            return state
        if type(stmt) is cst.Match:
            return self.exec_match(stmt, state, frame)
        return state

    def exec_small(self, small: cst.BaseSmallStatement, state: State, frame: Frame) -> State:
        if type(small) is cst.Assign:
            value = self.eval(small.value, state, frame)
            value = self.tag(value, small.value, frame)
            for target in small.targets:
                self.assign_target(target.target, value, state, frame, small.value)
            return state
        if type(small) is cst.AnnAssign:
            if small.value is not None:
                value = self.tag(self.eval(small.value, state, frame), small.value, frame)
                self.assign_target(small.target, value, state, frame, small.value)
            return state
        if type(small) is cst.AugAssign:
            current = self.eval(small.target, state, frame)
            rhs = self.eval(small.value, state, frame)
            op = _binop_name(small.operator)
            value = self.arith(op, current, rhs) if op else UnknownV("augmented assignment")
            value = self.tag(value, small.value, frame)
            self.assign_target(small.target, value, state, frame, small.value)
            return state
        if type(small) is cst.Expr:
            self.eval(small.value, state, frame)
            return state
        if type(small) is cst.Return:
            returned: Value = NoneV()
            if small.value is not None:
                returned = self.tag(self.eval(small.value, state, frame), small.value, frame)
            frame.returns.append((state.pc, returned))
            frame.exits.append((state.pc, self_part(state.env)))
            state.alive = False
            return state
        if type(small) is cst.Raise:
            state.alive = False
            return state
        if type(small) is cst.Assert:
            state.pc = conj(state.pc, self.condition(small.test, state, frame))
            return state
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            self.exec_import(small, state)
            return state
        return state

    def exec_import(self, small: cst.Import | cst.ImportFrom, state: State) -> None:
        names = small.names
        if isinstance(names, cst.ImportStar):
            return
        for alias in names:
            asname = alias.asname
            bound = alias.name
            if asname is not None and type(asname.name) is cst.Name:
                local = asname.name.value
            elif type(bound) is cst.Name:
                local = bound.value
            else:
                continue
            imported = bound.value if type(bound) is cst.Name else local
            if imported == self.ctx.modes.enum_name:
                state.env[local] = ModeEnumV()
            elif imported in KNOWN_MODULES:
                state.env[local] = ModuleV(KNOWN_MODULES[imported])
            elif self.ctx.dataclass_fields(imported) is not None:
                state.env[local] = ClassRefV(imported)
            else:
                state.env[local] = FunctionRefV(imported)

    def exec_if(self, stmt: cst.If, state: State, frame: Frame) -> State:
        # An `elif` chain is walked in a loop and joined from its end, as the recursion over
        # `orelse` would: a valid chain of a few thousand branches is deeper than Python's
        # recursion limit.
        branches: list[tuple[Formula, State, Formula, Formula, Formula]] = []
        current: cst.If | None = stmt
        while current is not None:
            cond = self.condition(current.test, state, frame)
            then_pc = conj(state.pc, cond)
            else_pc = conj(state.pc, neg(cond))
            then_state = state.fork(then_pc)
            if then_pc != FALSE:
                then_state = self.exec_suite(current.body, then_state, frame)
            else:
                then_state.alive = False
            branches.append((cond, then_state, state.pc, then_pc, else_pc))
            else_state = state.fork(else_pc)
            orelse, current = current.orelse, None
            if else_pc == FALSE:
                else_state.alive = False
            elif type(orelse) is cst.If:
                state, current = else_state, orelse
            elif type(orelse) is cst.Else:
                else_state = self.exec_suite(orelse.body, else_state, frame)
        for cond, then_state, pc, then_pc, else_pc in reversed(branches):
            else_state = self.join(cond, then_state, else_state, pc, then_pc, else_pc)
        return else_state

    def join(
        self,
        cond: Formula,
        a: State,
        b: State,
        pc: Formula,
        a_pc: Formula,
        b_pc: Formula,
    ) -> State:
        if not a.alive and not b.alive:
            return State(a.env, FALSE, alive=False)
        if not a.alive:
            return b
        if not b.alive:
            return a
        env: dict[str, Value] = {}
        # Not assigned on one side: reading it there raises (NameError, AttributeError).
        unbound = UnboundV()
        for name in a.env.keys() | b.env.keys():
            va, vb = a.env.get(name), b.env.get(name)
            if va is vb and va is not None:
                env[name] = va  # the same value on both sides: what `merge` gives back
                continue
            env[name] = merge(
                cond, va if va is not None else unbound, vb if vb is not None else unbound
            )
        joined_pc = pc if (a.pc == a_pc and b.pc == b_pc) else disj(a.pc, b.pc)
        return State(env, joined_pc)

    def exec_loop(self, stmt: cst.For | cst.While, state: State, frame: Frame) -> State:
        if not self.record_stores or ".append" not in frame.fn.raw_text():
            return self._exec_loop(stmt, state, frame)
        # Lists appended to in the loop (`idxcheck.interp.fills`): a loop nested in another
        # keeps what the outer one decided of its appends.
        added = {k: v for k, v in classify_appends(stmt).items() if k not in self._appends}
        self._appends.update(added)
        try:
            if type(stmt) is cst.For and any(r is None for _, r in added.values()):
                self._fill(stmt, state, frame)
            return self._exec_loop(stmt, state, frame)
        finally:
            for key in added:
                del self._appends[key]

    def _fill(self, stmt: cst.For, state: State, frame: Frame) -> None:
        """Run the body of `for i in range(N)` once more, `i` a symbol, for the entries its
        appends give the lists (`self.stores.fill`); nothing else of that run is kept."""
        count_node = range_count(stmt)
        assert count_node is not None and type(stmt.target) is cst.Name
        count = self.eval(count_node, state.fork(state.pc), frame)
        origin = f"{frame.fn.qualname}:loop@{frame.fn.ordinal(stmt)}"
        if not isinstance(count, IntV):
            for call, reason in self._appends.values():
                attr = appended_attr(call)
                if reason is None and attr is not None:
                    self.stores.refuse(
                        attr, f"`self.{attr}` is appended to in a loop whose count is not modelled"
                    )
            return
        index = Sym(f"{LOOP_PREFIX}{frame.fn.file.path}:{origin}")
        body_state = state.fork(state.pc)
        body_state.env[stmt.target.value] = IntV(index)
        outer, record = self._filling, self.record
        self._filling = FillLoop(stmt.target.value, index, strip(count.term), origin)
        self.record = False
        try:
            self.exec_suite(stmt.body, body_state, frame)
        finally:
            self._filling, self.record = outer, record

    def _appended(self, node: cst.Call, args: list[Value], state: State) -> None:
        """`self.<attr>.append(value)`: an entry of the loop being filled, or why the list's
        entries are not modelled."""
        attr = appended_attr(node)
        if attr is None or not self.record_stores:
            return
        found = self._appends.get(id(node))
        if found is None:
            self.stores.refuse(attr, f"`self.{attr}` is appended to outside a loop over `range`")
        elif found[1] is not None:
            self.stores.refuse(attr, found[1])
        elif self._filling is not None and args:
            fill = self._filling
            self.stores.fill(attr, LoopFill(fill.index, fill.count, state.pc, args[0], fill.origin))

    def _list_entry(self, base: Value, attr: str, index: Term, state: State) -> Value:
        """Entry `index` of a list attribute that loops fill, on each path: an empty list is
        what the loops fill, None has no entry (a `TypeError`: the path raises)."""
        if isinstance(base, ChoiceV):
            return map_choice(base, lambda v: self._list_entry(v, attr, index, state))
        if (isinstance(base, TupleV) and not base.items) or base == RuntimeV(f"self.{attr}"):
            # (A list assigned again where a loop fills it, `self.x = [] if flag else None`, is
            # per-forward state: what a loop filled where it is not None.)
            return self.stores.entry(attr, index, state.pc, self.ctx.modes.members)
        if isinstance(base, NoneV):
            return UnboundV()
        if isinstance(base, (UnknownV, UnboundV)):
            return base
        return UnknownV(f"`self.{attr}` holds entries other than those its loops append")

    def _exec_loop(self, stmt: cst.For | cst.While, state: State, frame: Frame) -> State:
        # The body is interpreted once, under an opaque "the loop runs" condition: sites inside
        # are recorded, and values assigned in it join with those from before the loop.
        if isinstance(stmt, cst.For):
            self.eval(stmt.iter, state, frame)
        else:
            self.condition(stmt.test, state, frame)
        ran = Atom(
            f"{frame.fn.file.path}:{frame.fn.qualname}:loop@{frame.fn.ordinal(stmt)}",
            "the loop body runs",
        )
        body_state = state.fork(conj(state.pc, ran))
        if type(stmt) is cst.For:
            self.assign_target(stmt.target, UnknownV("loop variable"), body_state, frame, None)
        body_state = self.exec_suite(stmt.body, body_state, frame)
        skip_state = state.fork(conj(state.pc, neg(ran)))
        joined = self.join(
            ran, body_state, skip_state, state.pc, conj(state.pc, ran), conj(state.pc, neg(ran))
        )
        if not joined.alive:
            # A loop whose body always returns may still not run.
            joined = skip_state
        if stmt.orelse is not None:
            joined = self.exec_suite(stmt.orelse.body, joined, frame)
        return joined

    def exec_try(self, stmt: cst.Try | cst.TryStar, state: State, frame: Frame) -> State:
        raised = Atom(
            f"{frame.fn.file.path}:{frame.fn.qualname}:try@{frame.fn.ordinal(stmt)}",
            "the try body raises",
        )
        body_state = self.exec_suite(stmt.body, state.fork(state.pc), frame)
        if stmt.orelse is not None and body_state.alive:
            body_state = self.exec_suite(stmt.orelse.body, body_state, frame)
        result = body_state
        for handler in stmt.handlers:
            handler_state = state.fork(conj(state.pc, raised))
            handler_state = self.exec_suite(handler.body, handler_state, frame)
            result = self.join(raised, handler_state, result, state.pc, handler_state.pc, result.pc)
        if stmt.finalbody is not None and result.alive:
            result = self.exec_suite(stmt.finalbody.body, result, frame)
        return result

    def exec_match(self, stmt: cst.Match, state: State, frame: Frame) -> State:
        self.eval(stmt.subject, state, frame)
        # No case may match (the statement falls through), unless the last is `case _:` or a
        # bare capture without a guard.
        last = stmt.cases[-1] if stmt.cases else None
        irrefutable = (
            last is not None
            and last.guard is None
            and type(last.pattern) is cst.MatchAs
            and last.pattern.pattern is None
        )
        result: State | None = None if irrefutable else state.fork(state.pc)
        for index, case in enumerate(stmt.cases):
            taken = Atom(
                f"{frame.fn.file.path}:{frame.fn.qualname}:case@{frame.fn.ordinal(case)}",
                f"case {index} matches",
            )
            case_state = self.exec_suite(case.body, state.fork(conj(state.pc, taken)), frame)
            result = (
                case_state
                if result is None
                else self.join(taken, case_state, result, state.pc, case_state.pc, result.pc)
            )
        return result if result is not None else state

    # -- assignment ------------------------------------------------------------------------

    def assign_target(
        self,
        target: cst.BaseExpression,
        value: Value,
        state: State,
        frame: Frame,
        value_node: cst.BaseExpression | None,
    ) -> None:
        if type(target) is cst.Name:
            # A local is not a site: its value becomes one where it reaches a metadata
            # field, a kernel keyword, a buffer or an attribute.
            state.env[target.value] = value
        elif type(target) is cst.Tuple or type(target) is cst.List:
            items = self.unpack(value, len(target.elements))
            for element, item in zip(target.elements, items, strict=False):
                if type(element) is cst.StarredElement:
                    self.assign_target(
                        element.value, UnknownV("starred assignment"), state, frame, None
                    )
                else:
                    self.assign_target(element.value, item, state, frame, None)
        elif type(target) is cst.Attribute:
            base = self.eval(target.value, state, frame)
            attr = target.attr.value
            owner = _dotted(target.value)
            if isinstance(base, SelfV):
                self.self_writes.setdefault(attr, []).append(value)
                state.env[SELF_PREFIX + attr] = value
                self.bind(attr, value, target, BindingKind.ATTRIBUTE, state, frame, owner=owner)
            elif isinstance(base, ObjectV) and type(target.value) is cst.Name:
                state.env[target.value.value] = base.with_field(attr, value)
                self.bind(
                    attr,
                    value,
                    target,
                    BindingKind.ATTRIBUTE,
                    state,
                    frame,
                    group=base.origin,
                    owner=owner,
                )
            else:
                group = base.origin if isinstance(base, ObjectV) else None
                self.bind(
                    attr,
                    value,
                    target,
                    BindingKind.ATTRIBUTE,
                    state,
                    frame,
                    group=group,
                    owner=owner,
                )
        elif type(target) is cst.Subscript:
            self.assign_subscript(target, value, state, frame)
        elif type(target) is cst.StarredElement:
            self.assign_target(target.value, UnknownV("starred assignment"), state, frame, None)

    def assign_subscript(
        self, target: cst.Subscript, value: Value, state: State, frame: Frame
    ) -> None:
        base_name = _base_name(target.value)
        base_value = self.eval(target.value, state, frame)
        lower, upper, is_slice = self.slice_bounds(target, state, frame)
        if isinstance(base_value, DictV) and not is_slice:
            key = self._dict_key(target, state, frame)
            if key is not None:
                self.bind(key, value, target, BindingKind.DICTKEY, state, frame)
                return
            stored = self._stored_attr(target, state, frame)
            if stored is not None and self.record_stores:
                self.stores.record(stored[0], stored[1], state.pc, value)
            return
        if base_name is None:
            return
        self.refilled.add(base_name)
        self.refills.note(base_name, base_value, state.pc, self.ctx.modes.members)
        if is_slice:
            self.access(base_value, lower, upper, target, state, frame)
            # `indptr[1 : bs + 1] = cumsum(lens)` makes `indptr` the layout [0, n, 2n, ...]:
            # the slice write's offset shifts the written layout into the full one.
            full = self.written_layout(value, lower)
            self.bind(
                base_name,
                full,
                target,
                BindingKind.SLICE,
                state,
                frame,
                lower,
                upper,
                source_length=length_of_value(value),
            )
            if type(target.value) is cst.Name and isinstance(full, LayoutV):
                state.env[target.value.value] = full

    def written_layout(self, value: Value, lower: Term | None) -> Value:
        if isinstance(value, ChoiceV):
            return ChoiceV(tuple((c, self.written_layout(v, lower)) for c, v in value.alts))
        if not isinstance(value, LayoutV):
            return value
        offset = const_value(lower) if lower is not None else 0
        if offset is None or offset == 0:
            return value
        # A layout written from position `offset` on: entry `offset + i` holds
        # start + i * stride, so the whole buffer is uniform when start == offset * stride.
        start = binop("-", value.start, binop("*", Const(offset), value.stride))
        entries = binop("+", value.entries, Const(offset)) if value.entries is not None else None
        return LayoutV(start, value.stride, entries, value.loc, value.text, value.source)

    def unpack(self, value: Value, count: int) -> list[Value]:
        if isinstance(value, TupleV):
            if len(value.items) == count:
                return list(value.items)
            return [UnknownV("unpacking a tuple of another length")] * count
        if isinstance(value, ChoiceV):
            columns: list[list[tuple[Formula, Value]]] = [[] for _ in range(count)]
            for cond, alt in value.alts:
                for i, item in enumerate(self.unpack(alt, count)):
                    columns[i].append((cond, item))
            return [merge_alternatives(col) for col in columns]
        if isinstance(value, RuntimeV):
            return [RuntimeV(f"{value.path}[{i}]") for i in range(count)]
        if isinstance(value, UnknownV):
            return [value] * count
        return [UnknownV("unpacking a value that is not a tuple")] * count

    # -- bindings --------------------------------------------------------------------------

    def bind(
        self,
        name: str,
        value: Value,
        node: cst.CSTNode,
        kind: BindingKind,
        state: State,
        frame: Frame,
        lower: Term | None = None,
        upper: Term | None = None,
        group: Loc | None = None,
        source_length: Term | None = None,
        declared_by: tuple[str, str] | None = None,
        owner: str | None = None,
        role: Role | None = None,
        destination: str | None = None,
    ) -> None:
        if not self.record:
            return
        if role is None:
            role = self.profile.role_of(name)
        if role is None:
            return
        self.bindings.append(
            Binding(
                role=role,
                name=name,
                value=value,
                pc=state.pc,
                loc=frame.fn.loc(node),
                function=frame.fn.qualname,
                chain=frame.chain,
                kind=kind,
                target_lower=lower,
                target_upper=upper,
                group=group,
                source_length=source_length,
                declared_by=declared_by,
                scope=(frame.fn.def_line, frame.fn.end_line),
                mode_expr=self._mode_expr(state),
                width_holder=self._width_holder(state),
                owner=owner,
                destination=destination,
            )
        )

    def _mode_expr(self, state: State) -> str:
        """A local that holds the forward mode, or the mode attribute of a local forward
        batch ("" where neither is in scope)."""
        for name, value in state.env.items():
            if isinstance(value, CurrentModeV) and name.isidentifier():
                return name
        attr = next((a for a, k in self.profile.forward_batch_attrs.items() if k == "mode"), "")
        for name, value in state.env.items():
            if (
                attr
                and isinstance(value, RuntimeV)
                and value.path == "forward_batch"
                and name.isidentifier()
            ):
                return f"{name}.{attr}"
        return ""

    def _width_holder(self, state: State) -> str:
        """A local that holds the runtime object publishing the width (the profile's
        `WIDTH_HOLDER`), or that attribute of a local forward batch ("" where neither)."""
        holder = self.profile.width_holder
        if not holder or not self.profile.runtime_width_attrs:
            return ""
        for name, value in state.env.items():
            if (
                isinstance(value, RuntimeV)
                and value.path.rsplit(".", 1)[-1] == holder
                and name.isidentifier()
            ):
                return name
        if self.profile.forward_batch_attrs.get(holder) is None:
            return ""
        for name, value in state.env.items():
            if (
                isinstance(value, RuntimeV)
                and value.path == "forward_batch"
                and name.isidentifier()
            ):
                return f"{name}.{holder}"
        return ""

    # -- expressions -----------------------------------------------------------------------

    def tag(self, value: Value, node: cst.BaseExpression, frame: Frame) -> Value:
        """Attach provenance to an integer: where it was written, and as what."""
        if isinstance(value, IntV):
            term = value.term
            if isinstance(term, Tagged) and term.loc is frame.fn.loc(node):
                return value
            return IntV(Tagged(term, frame.fn.loc(node)))
        return value

    def eval(self, node: cst.BaseExpression, state: State, frame: Frame) -> Value:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            return UnknownV(f"{_describe(node)} is not modelled")
        value: Value = method(node, state, frame)
        return value

    def eval_Name(self, node: cst.Name, state: State, frame: Frame) -> Value:
        name = node.value
        if name in state.env:
            return state.env[name]
        if name == "True":
            return BoolV(TRUE)
        if name == "False":
            return BoolV(FALSE)
        if name == "None":
            return NoneV()
        if name == self.ctx.modes.enum_name:
            return ModeEnumV()
        if (
            self.ctx.algorithms is not None
            and name == self.ctx.algorithms.enum_name
            and self._algorithms()
        ):
            return AlgorithmEnumV()
        if name in KNOWN_MODULES:
            return ModuleV(KNOWN_MODULES[name])
        if self.ctx.dataclass_fields(name) is not None:
            return ClassRefV(name)
        if name in self.profile.config_object_names:
            return ConfigV(name)
        if (
            name in BUILTINS
            or name in self.ctx.module_functions
            or name in self.profile.config_functions
            or name in self.profile.width_functions
            or name in library.BARE_FUNCTIONS
        ):
            return FunctionRefV(name)
        constant = module_constant(frame.fn.file, name)
        if constant is not None:
            return IntV(Const(constant))  # `MAX_QUERY_LEN = 8192` at module level
        found = functions.tree_name(self, name, frame)
        if found is not None:
            return found
        index = self.ctx.functions  # keeps each file's imports (`file_imports` builds them anew)
        imports = index.imports(frame.fn.file) if index is not None else file_imports(frame.fn.file)
        imported = imports.get(name)
        if imported is not None and imported.name is not None:
            model = library.IMPORTED.get((imported.module, imported.name))
            if model is not None:
                return FunctionRefV(model)  # `from dataclasses import replace`
        return UnknownV(f"name `{name}` is not defined in the analysed code")

    def eval_Integer(self, node: cst.Integer, state: State, frame: Frame) -> Value:
        found = _INTEGERS.get(node.value)
        if found is None:
            digits = node.value.replace("_", "")
            try:
                found = IntV(Const(int(digits, 0)))
            except ValueError:
                found = IntV(Const(int(digits)))
            _INTEGERS[node.value] = found
        return found

    def eval_Float(self, node: cst.Float, state: State, frame: Frame) -> Value:
        return UnknownV("a float")

    def eval_SimpleString(self, node: cst.SimpleString, state: State, frame: Frame) -> Value:
        found = _STRING_VALUES.get(node.value)
        if found is None:
            try:
                value = node.evaluated_value
            except Exception:
                found = UnknownV("a string")
            else:
                found = StrV(value) if isinstance(value, str) else UnknownV("a bytes literal")
            if len(_STRING_VALUES) >= _MAX_STRING_VALUES:
                _STRING_VALUES.clear()
            _STRING_VALUES[node.value] = found
        return found

    def eval_ConcatenatedString(
        self, node: cst.ConcatenatedString, state: State, frame: Frame
    ) -> Value:
        return StrV("")

    def eval_FormattedString(self, node: cst.FormattedString, state: State, frame: Frame) -> Value:
        return StrV("")

    def eval_Ellipsis(self, node: cst.Ellipsis, state: State, frame: Frame) -> Value:
        return UnknownV("...")

    def eval_Tuple(self, node: cst.Tuple, state: State, frame: Frame) -> Value:
        return self._sequence(node.elements, state, frame)

    def eval_List(self, node: cst.List, state: State, frame: Frame) -> Value:
        return self._sequence(node.elements, state, frame)

    def _sequence(self, elements: Sequence[cst.BaseElement], state: State, frame: Frame) -> Value:
        items: list[Value] = []
        for element in elements:
            value = self.eval(element.value, state, frame)
            if type(element) is cst.StarredElement:
                return UnknownV("a starred element")
            items.append(self.tag(value, element.value, frame))
        return TupleV(tuple(items))

    def eval_Set(self, node: cst.Set, state: State, frame: Frame) -> Value:
        for element in node.elements:
            self.eval(element.value, state, frame)
        return UnknownV("a set")

    def eval_Dict(self, node: cst.Dict, state: State, frame: Frame) -> Value:
        items: list[tuple[str, Value]] = []
        group = frame.fn.loc(node)
        for element in node.elements:
            if type(element) is not cst.DictElement:  # `**other`
                self.eval(element.value, state, frame)
                continue
            key = self.eval(element.key, state, frame)
            value = self.tag(self.eval(element.value, state, frame), element.value, frame)
            if isinstance(key, StrV):
                items.append((key.value, value))
                self.bind(
                    key.value, value, element.key, BindingKind.DICTKEY, state, frame, group=group
                )
        return DictV(tuple(items))

    def eval_Await(self, node: cst.Await, state: State, frame: Frame) -> Value:
        return self.eval(node.expression, state, frame)

    def eval_NamedExpr(self, node: cst.NamedExpr, state: State, frame: Frame) -> Value:
        value = self.tag(self.eval(node.value, state, frame), node.value, frame)
        self.assign_target(node.target, value, state, frame, node.value)
        return value

    def eval_Lambda(self, node: cst.Lambda, state: State, frame: Frame) -> Value:
        return UnknownV("a lambda")

    def _comprehension(self, node: cst.BaseExpression, state: State, frame: Frame) -> Value:
        return UnknownV("a comprehension")

    eval_ListComp = _comprehension
    eval_SetComp = _comprehension
    eval_DictComp = _comprehension
    eval_GeneratorExp = _comprehension

    def eval_Attribute(self, node: cst.Attribute, state: State, frame: Frame) -> Value:
        base = self.eval(node.value, state, frame)
        if isinstance(base, SelfV) and SELF_PREFIX + node.attr.value in state.env:
            return self._reading(state.env[SELF_PREFIX + node.attr.value], node, frame)
        if isinstance(base, UnknownV) and type(node.value) is cst.Name:
            # A name the function does not bind: a plain enum of the tree, whose members
            # compare as constants.
            member = enum_member(node, frame.fn.file, self.ctx)
            if member is not None:
                return member
        return self.attribute(base, node.attr.value, node, frame)

    def _reading(self, value: Value, node: cst.CSTNode, frame: Frame) -> Value:
        if isinstance(value, IntV):
            return IntV(Tagged(strip(value.term), frame.fn.loc(node)))
        return value

    def attribute(
        self, base: Value, attr: str, node: cst.CSTNode | None, frame: Frame | None
    ) -> Value:
        if isinstance(base, ChoiceV):
            return map_choice(base, lambda v: self.attribute(v, attr, node, frame))
        if isinstance(base, UnboundV):
            return base
        if isinstance(base, SuperV):
            return BoundMethodV(base, attr)
        if isinstance(base, NoneV):
            return UnknownV(f"attribute `{attr}` of None")
        if isinstance(base, SelfV):
            return self.self_attribute(attr, node, frame)
        if isinstance(base, ConfigV):
            symbol = self.profile.config_symbols.get(attr)
            if symbol is not None:
                return IntV(Sym(symbol))
            if attr in self.profile.algorithm_config_attrs and self._algorithms() is not None:
                return AlgorithmV(name=True)  # the configured name, before it is parsed
            if attr in self.profile.config_object_attrs:
                # A part of it (`vllm_config.speculative_config`).
                return ConfigV(f"{base.path}.{attr}")
            return UnknownV(f"configuration `{attr}` is not a symbol of the profile")
        if isinstance(base, RuntimeV):
            loc = frame.fn.loc(node) if frame is not None and node is not None else None
            return self.runtime_attribute(base, attr, loc)
        if isinstance(base, ModuleV):
            return ModuleV(f"{base.name}.{attr}")
        if isinstance(base, ModeEnumV):
            if attr in self.ctx.modes.members:
                return MemberV(attr)
            return UnknownV(f"`{self.ctx.modes.enum_name}.{attr}` is not a member")
        if isinstance(base, (CurrentModeV, MemberV)):
            return BoundMethodV(base, attr)
        if isinstance(base, AlgorithmEnumV):
            assert self.ctx.algorithms is not None
            if attr in self.ctx.algorithms.members:
                return AlgorithmV(attr)
            return BoundMethodV(base, attr)
        if isinstance(base, ObjectV):
            found = base.get(attr)
            if found is not None:
                return found
            return UnknownV(f"`{base.cls}.{attr}` is not set here")
        if isinstance(base, BoundMethodV):
            return UnknownV(f"attribute `{attr}` of a method")
        if isinstance(base, (LayoutV, BufferV, ConstVecV)):
            if attr == "shape":
                length = length_of(base)
                return TupleV(
                    (IntV(length) if length is not None else UnknownV("an unknown dimension"),)
                )
            return BoundMethodV(base, attr)
        if isinstance(base, UnknownV):
            return base
        if isinstance(base, IntV):
            return BoundMethodV(base, attr)
        return BoundMethodV(base, attr)

    def self_attribute(self, attr: str, node: cst.CSTNode | None, frame: Frame | None) -> Value:
        if attr in self.attrs:
            value = self.attrs[attr]
            if node is not None and frame is not None:
                return self._reading(value, node, frame)
            return value
        if attr in self.methods:
            return BoundMethodV(SelfV(), attr)
        if attr in self.forward_state_attrs:
            return RuntimeV(f"self.{attr}")
        return UnknownV(f"`self.{attr}` is not assigned in `{self.class_name}`")

    def _algorithms(self) -> AlgorithmOracle | None:
        """The scanned tree's speculative-algorithm enum, where it has one."""
        found = self.ctx.algorithms
        return found if found is not None and found.members else None

    def runtime_attribute(self, base: RuntimeV, attr: str, loc: Loc | None = None) -> Value:
        # `batch_field_path` names what this returns for the forward batch's fields.
        if attr in self.profile.runtime_width_attrs:
            return IntV(RuntimeWidth())
        if attr in self.profile.algorithm_attrs and self._algorithms() is not None:
            return AlgorithmV()  # the server's algorithm, whichever object holds it
        if attr in self.profile.worker_flags:
            return BoolV(Atom(WORKER_ATOM, WORKER_TEXT))
        if attr in self.profile.config_object_attrs:
            return ConfigV(f"{base.path}.{attr}")
        if base.path == "forward_batch":
            kind = self.profile.forward_batch_attrs.get(attr)
            if kind is not None:
                return self.runtime_value(kind, attr, loc)
        if attr == "shape" and base.length is not None:
            return TupleV((IntV(base.length),))
        return RuntimeV(f"{base.path}.{attr}")

    def eval_Subscript(self, node: cst.Subscript, state: State, frame: Frame) -> Value:
        base = self.eval(node.value, state, frame)
        if len(node.slice) != 1:
            for element in node.slice:
                self._eval_slice_parts(element.slice, state, frame)
            return self.multi_index(base)
        inner = node.slice[0].slice
        if type(inner) is cst.Index:
            index = self.eval(inner.value, state, frame)
            listed = _self_attr_name(node.value)
            if (
                isinstance(index, IntV)
                and listed is not None
                and not self.record_stores
                and self.stores.fills_list(listed)
            ):
                # (Only where the class's stores are complete: whether the class also changes
                # the list otherwise is known once every method was read.)
                return self._list_entry(base, listed, index.term, state)
            if isinstance(index, IntV) and isinstance(base, (DictV, ChoiceV)):
                attr = _self_attr_name(node.value)
                if attr is not None and self.stores.stores(attr):
                    return self.stores.lookup(attr, index.term, state.pc, self.ctx.modes.members)
            return self.index(base, index)
        assert type(inner) is cst.Slice
        lower = (
            self.to_term(self.eval(inner.lower, state, frame)) if inner.lower is not None else None
        )
        upper = (
            self.to_term(self.eval(inner.upper, state, frame)) if inner.upper is not None else None
        )
        step = self.eval(inner.step, state, frame) if inner.step is not None else None
        if step is not None:
            return self.multi_index(base)
        self.access(base, lower, upper, node, state, frame)
        return self.slice_value(base, lower, upper)

    def access(
        self,
        base: Value,
        lower: Term | None,
        upper: Term | None,
        node: cst.CSTNode,
        state: State,
        frame: Frame,
    ) -> None:
        """Record a slice of a preallocated buffer, to check it against the allocation."""
        if not self.record or upper is None:
            return
        for pc, alt in iter_choice(base, state.pc):
            if not isinstance(alt, BufferV) or alt.capacity is None:
                continue
            start = alt.offset if alt.offset is not None else Const(0)
            self.accesses.append(
                BufferAccess(
                    alt.name,
                    alt.capacity,
                    binop("+", start, upper),
                    alt.loc,
                    frame.fn.loc(node),
                    pc,
                    frame.fn.qualname,
                    frame.chain,
                )
            )

    def _eval_slice_parts(self, part: cst.BaseSlice, state: State, frame: Frame) -> None:
        if type(part) is cst.Index:
            self.eval(part.value, state, frame)
        elif type(part) is cst.Slice:
            for sub in (part.lower, part.upper, part.step):
                if sub is not None:
                    self.eval(sub, state, frame)

    def multi_index(self, base: Value) -> Value:
        if isinstance(base, RuntimeV):
            return RuntimeV(f"{base.path}[...]")
        if isinstance(base, (BufferV, LayoutV, ConstVecV)):
            return UnknownV("multi-dimensional indexing of a metadata buffer")
        return base if isinstance(base, UnknownV) else UnknownV("multi-dimensional indexing")

    def slice_bounds(
        self, node: cst.Subscript, state: State, frame: Frame
    ) -> tuple[Term | None, Term | None, bool]:
        if len(node.slice) != 1:
            return None, None, False
        inner = node.slice[0].slice
        if type(inner) is cst.Slice:
            lower = (
                self.to_term(self.eval(inner.lower, state, frame))
                if inner.lower is not None
                else None
            )
            upper = (
                self.to_term(self.eval(inner.upper, state, frame))
                if inner.upper is not None
                else None
            )
            return lower, upper, True
        return None, None, False

    def _stored_attr(
        self, node: cst.Subscript, state: State, frame: Frame
    ) -> tuple[str, Term] | None:
        """`self.<attr>[<integer>]`: the attribute and the key an entry is stored under."""
        attr = _self_attr_name(node.value)
        inner = node.slice[0].slice if len(node.slice) == 1 else None
        if attr is None or type(inner) is not cst.Index:
            return None
        key = self.eval(inner.value, state, frame)
        return (attr, key.term) if isinstance(key, IntV) else None

    def _dict_key(self, node: cst.Subscript, state: State, frame: Frame) -> str | None:
        inner = node.slice[0].slice if len(node.slice) == 1 else None
        if type(inner) is cst.Index:
            key = self.eval(inner.value, state, frame)
            if isinstance(key, StrV):
                return key.value
        return None

    def index(self, base: Value, index: Value) -> Value:
        if isinstance(base, ChoiceV):
            return map_choice(base, lambda v: self.index(v, index))
        if isinstance(base, TupleV):
            position = const_value(index.term) if isinstance(index, IntV) else None
            if position is not None and -len(base.items) <= position < len(base.items):
                return base.items[position]
            return UnknownV("indexing a tuple at an unknown position")
        if isinstance(base, DictV):
            if isinstance(index, StrV):
                found = base.get(index.value)
                return found if found is not None else UnknownV(f"key `{index.value}` is not set")
            return UnknownV("a dict indexed by a non-constant key")
        if isinstance(base, LayoutV):
            if isinstance(index, IntV):
                return IntV(binop("+", base.start, binop("*", index.term, base.stride)))
            return UnknownV("indexing a layout")
        if isinstance(base, ConstVecV):
            return IntV(base.value)
        if isinstance(base, RankCountsV):
            return IntV(base.this)
        if isinstance(base, RuntimeV):
            return RuntimeV(f"{base.path}[]")
        if isinstance(base, BufferV):
            return RuntimeV(f"{base.name}[]")
        if isinstance(base, (UnknownV, UnboundV)):
            return base  # (unbound: the path raises before the index is read, as `attribute`)
        return UnknownV("indexing a value that is not a sequence")

    def slice_value(self, base: Value, lower: Term | None, upper: Term | None) -> Value:
        if isinstance(base, ChoiceV):
            return map_choice(base, lambda v: self.slice_value(v, lower, upper))
        if isinstance(base, LayoutV):
            # A negative bound counts from the end (`[:-1]`).
            if base.entries is not None:
                lower, upper = (
                    binop("+", base.entries, b)
                    if b is not None and (const_value(b) or 0) < 0
                    else b
                    for b in (lower, upper)
                )
            low = lower if lower is not None else Const(0)
            start = binop("+", base.start, binop("*", low, base.stride))
            entries: Term | None = base.entries
            if upper is not None:
                entries = binop("-", upper, low)
            elif entries is not None:
                entries = binop("-", entries, low)
            return LayoutV(start, base.stride, entries, base.loc, base.text, base.source)
        if isinstance(base, BufferV):
            low = lower if lower is not None else Const(0)
            if upper is not None:
                length: Term | None = binop("-", upper, low)
            else:
                length = binop("-", base.length, low) if base.length is not None else None
            offset = binop("+", base.offset, low) if base.offset is not None else None
            return BufferV(base.name, length, base.loc, base.capacity, offset)
        if isinstance(base, ConstVecV):
            return ConstVecV(
                base.value, binop("-", upper, lower or Const(0)) if upper is not None else None
            )
        if isinstance(base, RuntimeV):
            if upper is not None:
                return RuntimeV(base.path, binop("-", upper, lower or Const(0)))
            return RuntimeV(base.path, None)
        if isinstance(base, TupleV):
            low_i = const_value(lower) if lower is not None else 0
            up_i = const_value(upper) if upper is not None else len(base.items)
            if low_i is not None and up_i is not None:
                return TupleV(base.items[low_i:up_i])
            return UnknownV("slicing a tuple at unknown bounds")
        if isinstance(base, (UnknownV, UnboundV)):
            return base  # (unbound: the path raises before the slice is read, as `attribute`)
        return UnknownV("slicing a value that is not a tensor")

    def eval_IfExp(self, node: cst.IfExp, state: State, frame: Frame) -> Value:
        cond = self.condition(node.test, state, frame)
        then_value = self.tag(
            self.eval(node.body, state.fork(conj(state.pc, cond)), frame), node.body, frame
        )
        else_value = self.tag(
            self.eval(node.orelse, state.fork(conj(state.pc, neg(cond))), frame), node.orelse, frame
        )
        return merge(cond, then_value, else_value)

    def eval_UnaryOperation(self, node: cst.UnaryOperation, state: State, frame: Frame) -> Value:
        if type(node.operator) is cst.Not:
            return BoolV(neg(self.condition(node.expression, state, frame)))
        value = self.eval(node.expression, state, frame)
        if type(node.operator) is cst.Minus:
            return self.arith("-", IntV(Const(0)), value)
        if type(node.operator) is cst.Plus:
            return value
        return UnknownV("bitwise inversion")

    def eval_BinaryOperation(self, node: cst.BinaryOperation, state: State, frame: Frame) -> Value:
        left = self.eval(node.left, state, frame)
        right = self.eval(node.right, state, frame)
        op = _binop_name(node.operator)
        if op is None:
            if type(node.operator) is cst.Divide:
                if _is_tensorish(left) or _is_tensorish(right):
                    return _runtime_like(left, right)
                return UnknownV("true division `/` (a float)")
            return UnknownV(f"operator `{type(node.operator).__name__}`")
        return self.arith(op, left, right)

    def arith(self, op: str, left: Value, right: Value) -> Value:
        if isinstance(left, ChoiceV):
            return map_choice(left, lambda v: self.arith(op, v, right))
        if isinstance(right, ChoiceV):
            return map_choice(right, lambda v: self.arith(op, left, v))
        if isinstance(left, IntV) and isinstance(right, IntV):
            return IntV(self._checked(binop(op, left.term, right.term)))
        if isinstance(left, LayoutV) and isinstance(right, IntV):
            if op == "*":
                return LayoutV(
                    binop("*", left.start, right.term),
                    binop("*", left.stride, right.term),
                    left.entries,
                    left.loc,
                    left.text,
                    "scaled",
                )
            if op in ("+", "-"):
                return LayoutV(
                    binop(op, left.start, right.term),
                    left.stride,
                    left.entries,
                    left.loc,
                    left.text,
                    left.source,
                )
        if isinstance(left, IntV) and isinstance(right, LayoutV) and op == "*":
            return self.arith(op, right, left)
        if isinstance(left, LayoutV) and isinstance(right, LayoutV) and op == "-":
            # Entry i of each is start + i * stride: with one stride the difference is the
            # same at every entry (`query_start_loc[1:] - query_start_loc[:-1]`).
            stride = poly.to_poly(strip(left.stride))
            if stride is not None and stride == poly.to_poly(strip(right.stride)):
                same = (
                    left.entries is not None
                    and right.entries is not None
                    and poly.to_poly(left.entries) == poly.to_poly(right.entries)
                )
                difference = binop("-", left.start, right.start)
                plain = poly.to_poly(difference)
                return ConstVecV(
                    poly.to_term(plain) if plain is not None else difference,
                    left.entries if same else None,
                )
        if isinstance(left, ConstVecV) and isinstance(right, IntV) and op in ("*", "+", "-", "//"):
            return ConstVecV(binop(op, left.value, right.term), left.length)
        if isinstance(left, IntV) and isinstance(right, ConstVecV) and op in ("*", "+"):
            return ConstVecV(binop(op, left.term, right.value), right.length)
        if _is_tensorish(left) or _is_tensorish(right):
            return _runtime_like(left, right)
        if isinstance(left, UnknownV):
            return left
        if isinstance(right, UnknownV):
            return right
        return IntV(self._checked(binop(op, self.to_term(left), self.to_term(right))))

    def _checked(self, term: Term) -> Term:
        if term_size(term, MAX_TERM_SIZE + 1) > MAX_TERM_SIZE:
            return Unknown("expression too large to model")
        return term

    def eval_BooleanOperation(
        self, node: cst.BooleanOperation, state: State, frame: Frame
    ) -> Value:
        left = self.eval(node.left, state, frame)
        left_truth = self.truth(left, node.left, frame)
        is_and = type(node.operator) is cst.And
        right_state = state.fork(conj(state.pc, left_truth if is_and else neg(left_truth)))
        right = self.eval(node.right, right_state, frame)
        if isinstance(left, BoolV) and isinstance(right, BoolV):
            return BoolV(
                conj(left.formula, right.formula) if is_and else disj(left.formula, right.formula)
            )
        if is_and:
            return merge(left_truth, right, left)
        return merge(left_truth, left, right)

    def eval_Comparison(self, node: cst.Comparison, state: State, frame: Frame) -> Value:
        left = self.eval(node.left, state, frame)
        parts: list[Formula] = []
        left_node: cst.BaseExpression = node.left
        for target in node.comparisons:
            right = self.eval(target.comparator, state, frame)
            parts.append(
                self.compare(target.operator, left, right, left_node, target.comparator, frame)
            )
            left = right
            left_node = target.comparator
        return BoolV(conj(*parts))

    def compare(
        self,
        operator: cst.BaseCompOp,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
        frame: Frame,
    ) -> Formula:
        if isinstance(left, ChoiceV):
            return disj(
                *(
                    conj(c, self.compare(operator, v, right, left_node, right_node, frame))
                    for c, v in left.alts
                )
            )
        if isinstance(right, ChoiceV):
            return disj(
                *(
                    conj(c, self.compare(operator, left, v, left_node, right_node, frame))
                    for c, v in right.alts
                )
            )
        # Exact types, as in `_dotted` (a comparison is met millions of times in a scan).
        kind = type(operator)
        if kind is cst.Is or kind is cst.IsNot or kind is cst.Equal or kind is cst.NotEqual:
            negate = kind is cst.IsNot or kind is cst.NotEqual
            result = self._equality(
                left, right, left_node, right_node, frame, kind is cst.Is or kind is cst.IsNot
            )
            if result is not None:
                return neg(result) if negate else result
        if kind is cst.In or kind is cst.NotIn:
            result = self._membership(left, right)
            if result is not None:
                return neg(result) if kind is cst.NotIn else result
        op = _cmp_name(operator)
        if op is not None and isinstance(left, (IntV, BoolV)) and isinstance(right, (IntV, BoolV)):
            return cmp(op, self.to_term(left), self.to_term(right))
        return self.opaque(left_node, right_node, operator, frame, left, right)

    def _equality(
        self,
        left: Value,
        right: Value,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
        frame: Frame,
        identity: bool,
    ) -> Formula | None:
        if isinstance(left, CurrentModeV) and isinstance(right, MemberV):
            return ModeIs(frozenset({right.name}))
        if isinstance(right, CurrentModeV) and isinstance(left, MemberV):
            return ModeIs(frozenset({left.name}))
        if isinstance(left, MemberV) and isinstance(right, MemberV):
            return BoolConst(left.name == right.name)
        if isinstance(left, CurrentModeV) and isinstance(right, CurrentModeV):
            return TRUE
        if isinstance(left, AlgorithmV) and isinstance(right, AlgorithmV):
            return _algorithm_equal(left, right, self.ctx.algorithms)
        if isinstance(right, NoneV) or isinstance(left, NoneV):
            other = left if isinstance(right, NoneV) else right
            if isinstance(other, NoneV):
                return TRUE
            if isinstance(other, AlgorithmV):
                # A member is never None; an unset name parses to the enum's NONE.
                if not other.name:
                    return FALSE
                algorithms = self.ctx.algorithms
                if algorithms is None or not algorithms.none_member:
                    return None
                return algorithms.over_atoms(ModeIs(frozenset({algorithms.none_member})))
            if isinstance(other, RankCountsV):
                # None with one rank, the ranks' counts with several: not known here.
                return Atom(f"none:{other.source}", f"{other.source} is None")
            if isinstance(other, (RuntimeV, UnknownV)):
                if isinstance(other, RuntimeV) and other.path:
                    return none_atom(other.path)
                code = frame.fn.code(left_node if isinstance(right, NoneV) else right_node)
                text = f"{short_text(code)} is None"
                return Atom(f"{frame.fn.qualname}:{text}", text)
            return FALSE
        if isinstance(left, StrV) and isinstance(right, StrV):
            return BoolConst(left.value == right.value)
        if not identity and isinstance(left, (IntV, BoolV)) and isinstance(right, (IntV, BoolV)):
            return cmp("==", self.to_term(left), self.to_term(right))
        return None

    def _membership(self, left: Value, right: Value) -> Formula | None:
        if isinstance(left, AlgorithmV) and isinstance(right, TupleV):
            each = [
                _algorithm_equal(left, v, self.ctx.algorithms)
                if isinstance(v, AlgorithmV)
                else None
                for v in right.items
            ]
            found = [e for e in each if e is not None]
            return disj(*found) if len(found) == len(each) else None
        if isinstance(left, CurrentModeV) and isinstance(right, TupleV):
            members = [v.name for v in right.items if isinstance(v, MemberV)]
            if len(members) == len(right.items):
                return ModeIs(frozenset(members))
        if isinstance(left, MemberV) and isinstance(right, TupleV):
            return BoolConst(
                any(isinstance(v, MemberV) and v.name == left.name for v in right.items)
            )
        if isinstance(left, StrV) and isinstance(right, TupleV):
            return BoolConst(
                any(isinstance(v, StrV) and v.value == left.value for v in right.items)
            )
        return None

    def opaque(
        self,
        left_node: cst.BaseExpression,
        right_node: cst.BaseExpression,
        operator: cst.BaseCompOp,
        frame: Frame,
        left: Value,
        right: Value,
    ) -> Formula:
        text = f"{short_text(frame.fn.code(left_node))} {_op_text(operator)} {short_text(frame.fn.code(right_node))}"
        return Atom(self.atom_key(text, frame, left, right), text)

    def atom_key(self, text: str, frame: Frame, *values: Value) -> str:
        # Conditions over runtime objects or `self` attributes mean the same wherever they are
        # written; other conditions are local to the function that wrote them.
        if values and all(
            isinstance(v, (RuntimeV, ConfigV, IntV, StrV, NoneV, SelfV)) for v in values
        ):
            paths = [v.path for v in values if isinstance(v, (RuntimeV, ConfigV))]
            if paths:
                return RUNTIME_ATOM + text
        if text.startswith("self."):
            return f"{self.class_name}:{text}"
        return f"{frame.fn.qualname}:{text}"

    def condition(self, node: cst.BaseExpression, state: State, frame: Frame) -> Formula:
        if type(node) is cst.BooleanOperation:
            # The truth of `a and b` from the truths of its operands: its value (`a` where `a`
            # is falsy) read as a whole would name an operand the interpreter cannot model by
            # the whole expression's text, a condition free of the operand's own.
            left = self.condition(node.left, state, frame)
            is_and = type(node.operator) is cst.And
            right_state = state.fork(conj(state.pc, left if is_and else neg(left)))
            right = self.condition(node.right, right_state, frame)
            return conj(left, right) if is_and else disj(left, right)
        value = self.eval(node, state, frame)
        return self.truth(value, node, frame)

    def truth(self, value: Value, node: cst.BaseExpression, frame: Frame) -> Formula:
        if isinstance(value, BoolV):
            return value.formula
        if isinstance(value, IntV):
            inner = strip(value.term)
            if isinstance(inner, (Unknown, RuntimeInt)):
                text = short_text(frame.fn.code(node))
                return Atom(self.atom_key(text, frame), text)
            return cmp("!=", value.term, Const(0))
        if isinstance(value, NoneV):
            return FALSE
        if isinstance(value, StrV):
            return BoolConst(bool(value.value))
        if isinstance(value, ChoiceV):
            return disj(*(conj(c, self.truth(v, node, frame)) for c, v in value.alts))
        if isinstance(
            value,
            (ObjectV, ClassRefV, ModuleV, FunctionRefV, BoundMethodV, SelfV, AlgorithmEnumV),
        ):
            return TRUE
        if isinstance(value, AlgorithmV) and not value.name:
            return TRUE  # an enum member
        if isinstance(value, RuntimeV):
            # Named by the runtime object, so that the same condition read in a runner and in
            # a backend is one atom.
            return Atom(RUNTIME_ATOM + value.path, value.path)
        text = short_text(frame.fn.code(node))
        return Atom(self.atom_key(text, frame), text)

    def to_term(self, value: Value) -> Term:
        if isinstance(value, IntV):
            return value.term
        if isinstance(value, BoolV):
            return ite(value.formula, Const(1), Const(0))
        if isinstance(value, RuntimeV):
            return RuntimeInt(value.path)
        if isinstance(value, UnknownV):
            return Unknown(value.reason)
        if isinstance(value, ChoiceV):
            result: Term | None = None
            for cond, alt in reversed(value.alts):
                term = self.to_term(alt)
                result = term if result is None else ite(cond, term, result)
            return result if result is not None else Unknown("no value")
        if isinstance(value, NoneV):
            return Unknown("None used as an integer")
        return Unknown(f"{_kind(value)} used as an integer")

    # -- calls -----------------------------------------------------------------------------

    def eval_Call(self, node: cst.Call, state: State, frame: Frame) -> Value:
        if type(node.func) is cst.Attribute and node.func.attr.value in IN_PLACE_METHODS:
            # Whatever the receiver evaluates to, its name is a buffer refilled in place.
            refilled = _base_name(node.func.value)
            if refilled is not None:
                self.refilled.add(refilled)
        func = self._callee(node.func, state, frame)
        if type(node.func) is cst.Attribute and node.func.attr.value in IN_PLACE_METHODS:
            # The buffer written in place, by what its receiver evaluates to on each path.
            self.refills.note(
                _base_name(node.func.value), _receiver(func), state.pc, self.ctx.modes.members
            )
        args: list[Value] = []
        kwargs: dict[str, Value] = {}
        dests = self._destinations(node, func, frame)
        writer = self._writer(node, func)
        for arg in node.args:
            value = self.tag(self.eval(arg.value, state, frame), arg.value, frame)
            if arg.star:
                return self._unknown_call(node, func, frame, "a call with *args or **kwargs")
            if writer is not None:
                slot = f"{arg.keyword.value}=" if arg.keyword is not None else f"#{len(args)}"
                self._hand_off(writer, slot, value, arg.value, state, frame)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = value
                dest = dests.keywords.get(arg.keyword.value)
                if dest is not None:
                    self._bind_destination(dest, value, arg.value, node, state, frame)
            else:
                dest = dests.positional.get(len(args))
                args.append(value)
                if dest is not None:
                    self._bind_destination(dest, value, arg.value, node, state, frame)
                elif not isinstance(func, (BoundMethodV, ClassRefV)) or (
                    isinstance(func, BoundMethodV) and not isinstance(func.receiver, SelfV)
                ):
                    # An index pointer handed to a kernel by position: its variable's name
                    # says what it is, and it pairs with the grid scalars of the call.
                    name = _base_name(arg.value)
                    if name is not None and self.profile.role_of(name) == Role.QO:
                        self.bind(
                            name,
                            value,
                            arg.value,
                            BindingKind.ARGUMENT,
                            state,
                            frame,
                            group=frame.fn.loc(node),
                        )
        if not kwargs and len(args) == 1:
            self._appended(node, args, state)
        return self.call(func, args, kwargs, node, state, frame)

    def _writer(self, node: cst.Call, func: Value) -> str | None:
        """What a call writes with, when the tensors it is handed are what it fills: a Triton
        kernel's launch (`kernel[grid](...)`) or a function of the scanned tree (not a
        builtin, nor one the profile or a library model gives the value of)."""
        if not self.record:
            return None
        name = callee_name(node.func)[0]
        if name is None:
            return None
        if type(node.func) is cst.Subscript:
            return f"{name}[]"
        if (
            isinstance(func, FunctionRefV)
            and func.name not in BUILTINS
            and func.name not in self.profile.config_functions
            and func.name not in self.profile.width_functions
            and library.function_model(func.name) is None
        ):
            return name
        return None

    def _hand_off(
        self,
        writer: str,
        slot: str,
        value: Value,
        node: cst.BaseExpression,
        state: State,
        frame: Frame,
    ) -> None:
        """Record a whole allocation (on some path) handed to `writer` at `slot`."""
        if not any(
            isinstance(alt, BufferV) and alt.shape is not None
            for _, alt in iter_choice(value, state.pc)
        ):
            return
        self.handoffs.append(
            Handoff(
                writer,
                slot,
                value,
                short_text(frame.fn.code(node)),
                frame.fn.loc(node),
                state.pc,
                frame.fn.qualname,
                frame.chain,
            )
        )

    def _super_methods(self, frame: Frame) -> dict[str, FunctionSource]:
        """The methods `super()` reaches in the method `frame` runs: those of its class's bases
        (a base's method that calls `super()` reaches the bases of that base)."""
        fn = frame.fn
        if fn.owner is not None:
            found = self.supers.get((fn.file.path, fn.owner))
            if found is not None:
                return found
        return self.base_methods

    def _destinations(self, node: cst.Call, func: Value, frame: Frame) -> CallDestinations:
        """The role-named parameters this call hands its arguments to."""
        if isinstance(func, ClassRefV):
            return NO_DESTINATIONS  # a dataclass: its fields are bound as it is built
        name, receiver = callee_name(node.func)
        method = None
        if isinstance(func, BoundMethodV) and isinstance(func.receiver, (SelfV, SuperV)):
            method = (
                self.methods.get(func.name)
                if isinstance(func.receiver, SelfV)
                else self._super_methods(frame).get(func.name)
            )
            if method is None:
                return NO_DESTINATIONS
        return destinations(self.profile, name, receiver, method, self.ctx.signatures)

    def _bind_destination(
        self,
        dest: Destination,
        value: Value,
        arg: cst.BaseExpression,
        node: cst.Call,
        state: State,
        frame: Frame,
    ) -> None:
        """A value reaching a role-named parameter has its role there. A value not modelled
        at all is left to the places its own name binds it (a parameter of a helper is no
        reason of its own to say what cannot be modelled)."""
        if isinstance(value, UnknownV):
            return
        if frame.depth > 0 and type(arg) is cst.Name and self._forwarded(arg.value, dest, frame):
            return
        self.bind(
            dest.param,
            value,
            arg,
            BindingKind.PARAMETER,
            state,
            frame,
            group=frame.fn.loc(node),
            owner=_dotted(node.func.value if type(node.func) is cst.Subscript else node.func),
            role=dest.role,
            destination=dest.text,
        )

    def _forwarded(self, name: str, dest: Destination, frame: Frame) -> bool:
        """A helper handing on a parameter of its own role: its caller's call bound the value
        already, together with what it was passed with (a grid scalar with its pointer)."""
        params = frame.fn.node.params
        names = {
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        }
        return name in names and self.profile.role_of(name) == dest.role

    def _callee(self, func: cst.BaseExpression, state: State, frame: Frame) -> Value:
        """What is called: a method of an object built here is a method, not a missing field."""
        if type(func) is cst.Attribute:
            base = self.eval(func.value, state, frame)
            if isinstance(base, ObjectV) and base.get(func.attr.value) is None:
                return BoundMethodV(base, func.attr.value)
            if func.attr.value in self.profile.width_functions and not isinstance(base, UnknownV):
                return BoundMethodV(base, func.attr.value)
            if isinstance(base, RuntimeV) and func.attr.value in RUNTIME_TENSOR_METHODS:
                # A method of a runtime tensor whose length is known (`seq_lens.numel()`).
                return BoundMethodV(base, func.attr.value)
            if isinstance(base, SelfV) and SELF_PREFIX + func.attr.value in state.env:
                return self._reading(state.env[SELF_PREFIX + func.attr.value], func, frame)
            return self.attribute(base, func.attr.value, func, frame)
        return self.eval(func, state, frame)

    def call(
        self,
        func: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
        keywords_bound: bool = False,
    ) -> Value:
        keyword_nodes = {a.keyword.value: a for a in node.args if a.keyword is not None}
        # Keywords that name a role bind the value, whatever is called (a metadata class, a
        # kernel launcher, dict(...)); a value already bound where it was built dedupes later.
        inlined = (
            isinstance(func, BoundMethodV)
            and isinstance(func.receiver, SelfV)
            and func.name in self.methods
        )
        if not isinstance(func, ClassRefV) and not inlined and not keywords_bound:
            # (Keywords of a helper of this class are its parameters: its own sinks bind them.)
            group = frame.fn.loc(node)
            callee = _dotted(node.func)
            called = callee_name(node.func)[0]
            for key, value in kwargs.items():
                self.bind(
                    key,
                    value,
                    keyword_nodes[key],
                    BindingKind.KEYWORD,
                    state,
                    frame,
                    group=group,
                    owner=callee,
                    destination=keyword_text(key, called),
                )
        counts = self.profile.runtime_counts.get(_base_name(node.func) or "")
        if counts is not None:
            # The runtime's counts (vLLM's decode/prefill split): one value per name wherever
            # they are read, so conditions on them in a caller and a helper agree.
            name = _base_name(node.func) or ""
            runtime = TupleV(tuple(IntV(RuntimeInt(f"{name}:{item}")) for item in counts))
            split = self.profile.uniform_splits.get(name)
            uniform = self._uniform_modes()
            threshold = (
                split_threshold(split, args, kwargs, self.to_term)
                if split is not None and uniform
                else None
            )
            if split is None or threshold is None:
                return runtime
            return uniform_split(split, runtime, threshold, ModeIs(uniform))
        synced = self.profile.padding_functions.get(_base_name(node.func) or "")
        if synced is not None and not isinstance(func, (BoundMethodV, ClassRefV)):
            return self.synced_count(_base_name(node.func) or "", synced, args, kwargs, node, frame)
        if isinstance(func, ChoiceV):
            # One of several functions (what a resolver returns on each path): the keywords
            # are bound once, above, not once per alternative.
            return map_choice(
                func, lambda f: self.call(f, args, kwargs, node, state, frame, keywords_bound=True)
            )
        if isinstance(func, BoundMethodV):
            return self.call_method(func, args, kwargs, node, state, frame)
        if isinstance(func, ModuleV):
            return self.call_function(func.name, args, kwargs, node, state, frame)
        if isinstance(func, FunctionRefV):
            return self.call_function(func.name, args, kwargs, node, state, frame)
        if isinstance(func, ClassRefV):
            return self.construct(func.name, args, kwargs, node, state, frame)
        if isinstance(func, ModeEnumV):
            return CurrentModeV()
        if (
            type(node.func) is cst.Name
            and node.func.value[:1].isupper()
            and isinstance(func, UnknownV)
        ):
            # A class not in the scanned code (a metadata class of another module): its
            # keywords are its fields; positional arguments are not mapped to fields.
            return ObjectV(node.func.value, tuple(kwargs.items()), frame.fn.loc(node))
        return self._unknown_call(node, func, frame, None)

    def _unknown_call(self, node: cst.Call, func: Value, frame: Frame, reason: str | None) -> Value:
        if isinstance(func, RuntimeV):
            return RuntimeV(f"{func.path}()")
        if isinstance(func, UnknownV) and reason is None:
            return UnknownV(f"call to `{short_text(frame.fn.code(node.func))}`: {func.reason}")
        return UnknownV(
            reason or f"call to `{short_text(frame.fn.code(node.func))}` is not modelled"
        )

    def call_method(
        self,
        func: BoundMethodV,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
    ) -> Value:
        receiver, name = func.receiver, func.name
        if isinstance(receiver, (AlgorithmV, AlgorithmEnumV)):
            return self.algorithm_method(receiver, name, args, kwargs, node, state, frame)
        if name in self.profile.width_functions:
            return self.width_function(name, args, kwargs, receiver, node, state, frame)
        if isinstance(receiver, SelfV):
            fn = self.methods.get(name)
            if fn is not None:
                return self.inline(fn, args, kwargs, node, state, frame)
            return UnknownV(f"`self.{name}()` is not defined in `{self.class_name}`")
        if isinstance(receiver, SuperV):
            fn = self._super_methods(frame).get(name)
            if fn is not None:
                return self.inline(fn, args, kwargs, node, state, frame, as_self=True)
            return UnknownV(f"`super().{name}()` is not in the scanned tree")
        if isinstance(receiver, CurrentModeV):
            formula = self.ctx.modes.call(
                name,
                [self._as_formula(a) for a in args],
                {k: self._as_formula(v) for k, v in kwargs.items()},
            )
            if formula is None:
                text = short_text(frame.fn.code(node))
                return BoolV(Atom(f"mode-predicate:{name}", text))
            return BoolV(formula)
        if isinstance(receiver, MemberV):
            formula = self.ctx.modes.call(
                name,
                [self._as_formula(a) for a in args],
                {k: self._as_formula(v) for k, v in kwargs.items()},
            )
            if formula is None:
                return UnknownV(f"`{name}` is not a predicate of {self.ctx.modes.enum_name}")
            return BoolV(specialise_formula(formula, receiver.name))
        if name == "copy_" and type(node.func) is cst.Attribute:
            if self.record and node.args:
                source_text = short_text(frame.fn.code(node.args[0].value))
                self._hand_off(
                    f".copy_({source_text})", "receiver", receiver, node.func.value, state, frame
                )
            target_name = _base_name(node.func.value)
            if target_name is not None:
                self.refilled.add(target_name)
            source = args[0] if args else UnknownV("copy_ without a source")
            lower, upper = self._receiver_slice(node.func.value, state, frame)
            if target_name is not None:
                self.bind(
                    target_name,
                    self.written_layout(source, lower),
                    node,
                    BindingKind.COPY,
                    state,
                    frame,
                    lower,
                    upper,
                    source_length=length_of_value(source),
                )
            return receiver
        if name in IN_PLACE_METHODS:
            return receiver
        if isinstance(receiver, (LayoutV, BufferV, ConstVecV, RuntimeV)):
            call = Call(self, name, args, kwargs, node, state, frame)
            if isinstance(receiver, RuntimeV):
                return torch.runtime_method(call, receiver)
            return torch.tensor_method(call, receiver)
        if isinstance(receiver, ConfigV):
            return UnknownV(f"call to `{receiver.path}.{name}()` is not modelled")
        if isinstance(receiver, IntV):
            if name in ("item", "__int__"):
                return receiver
            return UnknownV(f"method `{name}` of an integer")
        if isinstance(receiver, ObjectV):
            padding = self.profile.padding_methods.get(f"{receiver.cls}.{name}")
            if padding is not None:
                return self.padded_count(receiver.cls, name, padding, args, kwargs, node, frame)
            return UnknownV(f"method `{name}` of `{receiver.cls}` is not modelled")
        if isinstance(receiver, UnknownV):
            return UnknownV(f"call to `{short_text(frame.fn.code(node.func))}`: {receiver.reason}")
        if isinstance(receiver, BoolV) and name in MASK_COUNTS and not args and not kwargs:
            # A comparison that has `.sum()` is elementwise (a Python bool has no such method):
            # how many entries of a mask hold is the batch's, a runtime count like
            # `forward_batch.batch_size`, whatever the entries are.
            return RuntimeV(f"{short_text(frame.fn.code(node.func))}()")
        return UnknownV(f"call to `{short_text(frame.fn.code(node.func))}` is not modelled")

    def padded_count(
        self,
        cls: str,
        name: str,
        padding: tuple[str, int, int, int, str, str],
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        frame: Frame,
    ) -> Value:
        """A runtime method that pads a token count `n` up to a CUDA-graph capture size
        (`Profile.padding_methods`): the tuple it returns, whose descriptor holds the padded
        count `n'`. What is known of `n'` is its envelope: `n <= n' <= M` where `n <= M` (`M`
        the largest capture size), `n' == n` above it. It is written with a free integer `p`
        of its own (hidden from counterexamples): `n'` is `p` where `n <= p <= M`, else `n`;
        the padding's excess is then `p`, a value of the configuration's, not of the
        runtime's."""
        param, position, length, item, attr, bound = padding
        given = kwargs.get(param, args[position] if len(args) > position else None)
        if given is None:
            return UnknownV(f"`{cls}.{name}` without its `{param}`")
        count = self.to_term(given)
        text = short_text(frame.fn.code(node))
        free = Sym(f"{PADDED_PREFIX}{frame.fn.qualname}:{text}:{stable_hash(untag(count))[:16]}")
        largest = Sym(bound)
        padded = ite(conj(cmp("<=", count, free), cmp("<=", free, largest)), free, count)
        items: list[Value] = [RuntimeV(f"{cls}.{name}()[{i}]") for i in range(length)]
        items[item] = ObjectV(f"{cls}.{name}()", ((attr, IntV(padded)),), frame.fn.loc(node))
        return TupleV(tuple(items))

    def synced_count(
        self,
        name: str,
        model: tuple[str, int, int, int, str, str],
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        frame: Frame,
    ) -> Value:
        """A runtime function that agrees a padded token count across data-parallel ranks
        (`Profile.padding_functions`): the tuple it returns, whose item is None (one rank) or
        the ranks' counts, of which this rank's is the padded count passed, or one between it
        and the largest capture size where it is at most that size. Only where its flag
        (microbatching) is False: otherwise the ranks may take another rank's count."""
        param, position, length, item, flag, bound = model
        allowed = kwargs.get(flag)
        if not (isinstance(allowed, BoolV) and allowed.formula == FALSE):
            return UnknownV(
                f"`{name}` with `{flag}` not False: the ranks may be padded to another rank's count"
            )
        given = kwargs.get(param, args[position] if len(args) > position else None)
        if given is None:
            return UnknownV(f"`{name}` without its `{param}`")
        count = self.to_term(given)
        text = short_text(frame.fn.code(node))
        free = Sym(f"{PADDED_PREFIX}{frame.fn.qualname}:{text}:{stable_hash(untag(count))[:16]}")
        synced = ite(conj(cmp("<=", count, free), cmp("<=", free, Sym(bound))), free, count)
        items: list[Value] = [RuntimeV(f"{name}()[{i}]") for i in range(length)]
        items[item] = RankCountsV(synced, f"{name}()[{item}]")
        return TupleV(tuple(items))

    def _receiver_slice(
        self, node: cst.BaseExpression, state: State, frame: Frame
    ) -> tuple[Term | None, Term | None]:
        if type(node) is cst.Subscript:
            lower, upper, is_slice = self.slice_bounds(node, state, frame)
            if is_slice:
                return lower, upper
        return None, None

    def _as_formula(self, value: Value) -> Formula:
        if isinstance(value, BoolV):
            return value.formula
        if isinstance(value, IntV):
            return cmp("!=", value.term, Const(0))
        if isinstance(value, NoneV):
            return FALSE
        return Atom(f"value:{value!r}"[:200], "a flag")

    def algorithm_method(
        self,
        receiver: AlgorithmV | AlgorithmEnumV,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
    ) -> Value:
        """A method of the speculative-algorithm enum: a parser of the configured name gives
        the server's algorithm, a predicate its formula over the shared `algo:` conditions,
        any other method of the tree's enum is interpreted with the algorithm as `self`."""
        algorithms = self.ctx.algorithms
        assert algorithms is not None
        if isinstance(receiver, AlgorithmEnumV):
            if name not in self.profile.algorithm_parsers or len(args) + len(kwargs) != 1:
                return UnknownV(f"`{algorithms.enum_name}.{name}` is not modelled")
            given = args[0] if args else next(iter(kwargs.values()))
            if isinstance(given, AlgorithmV) and given.name:
                return AlgorithmV(given.member)
            if isinstance(given, NoneV) and algorithms.none_member:
                return AlgorithmV(algorithms.none_member)
            if isinstance(given, StrV) and given.value.upper() in algorithms.members:
                return AlgorithmV(given.value.upper())
            return UnknownV(f"`{algorithms.enum_name}.{name}` of a name that is not known")
        if receiver.name:
            return UnknownV(f"`.{name}()` of the algorithm's name is not modelled")
        formula = algorithms.predicate(
            name,
            [self._as_formula(a) for a in args],
            {k: self._as_formula(v) for k, v in kwargs.items()},
        )
        if formula is not None:
            if receiver.member:
                formula = _algorithm_is(formula, receiver.member)
            return BoolV(formula)
        fn = algorithms.method(name)
        if fn is None:
            return UnknownV(f"`{name}` is not a method of {algorithms.enum_name}")
        return self.inline(fn, args, kwargs, node, state, frame, receiver=receiver)

    def width_function(
        self,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        receiver: Value | None = None,
        node: cst.Call | None = None,
        state: State | None = None,
        frame: Frame | None = None,
    ) -> Value:
        """A width the runtime computes: interpreted from its definition in the scanned tree
        when there is one (so backend and runner share its conditions), else the profile's."""
        definition = self.ctx.width_defs.get(name)
        if definition is not None and node is not None and state is not None and frame is not None:
            return self.inline(definition, args, kwargs, node, state, frame, receiver=receiver)
        phase = self.profile.width_functions.get(name)
        if phase is not None and phase.startswith("arg:"):
            wanted = phase[len("arg:") :]
            given = kwargs.get(wanted, args[0] if args else None)
            return (
                given
                if isinstance(given, IntV)
                else UnknownV(f"`{name}` of a width that is not known")
            )
        if phase is None:
            given = kwargs.get("phase")
            if isinstance(given, StrV):
                phase = given.value
        if phase is None or phase not in self.ctx.phase_widths:
            return UnknownV(f"`{name}` with a phase that is not known")
        return IntV(self.ctx.phase_widths[phase])

    def call_function(
        self,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
    ) -> Value:
        """A function call: a library's (`idxcheck.interp.library`), else one of the project's
        configuration or width functions, else what a library gives of runtime values."""
        call = Call(self, name, args, kwargs, node, state, frame)
        model = library.function_model(name)
        if model is not None:
            return model(call)
        if name in self.profile.config_functions:
            return ConfigV(f"{name}()")
        if name in self.profile.width_functions:
            return self.width_function(name, args, kwargs, None, node, state, frame)
        followed = functions.call_tree_function(self, name, args, kwargs, node, state, frame)
        if followed is not None:
            return followed
        found = library.fallback(call)
        if found is not None:
            return found
        return UnknownV(f"call to `{name}` is not modelled")

    def construct(
        self,
        cls_name: str,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
    ) -> Value:
        fields = self.ctx.dataclass_fields(cls_name) or ()
        values: list[tuple[str, Value]] = []
        group = frame.fn.loc(node)
        positional_nodes = [a for a in node.args if a.keyword is None]
        path = self.ctx.dataclass_file(cls_name) if args and fields else None
        declared_by = (cls_name, path) if path is not None else None
        for index, value in enumerate(args):
            if index < len(fields):
                values.append((fields[index], value))
                self.bind(
                    fields[index],
                    value,
                    positional_nodes[index],
                    BindingKind.POSITIONAL,
                    state,
                    frame,
                    group=group,
                    declared_by=declared_by,
                )
        for key, value in kwargs.items():
            values.append((key, value))
            keyword_node = next(
                a for a in node.args if a.keyword is not None and a.keyword.value == key
            )
            self.bind(key, value, keyword_node, BindingKind.KEYWORD, state, frame, group=group)
        return ObjectV(cls_name, tuple(values), group)

    def inline(
        self,
        fn: FunctionSource,
        args: list[Value],
        kwargs: dict[str, Value],
        node: cst.Call,
        state: State,
        frame: Frame,
        receiver: Value | None = None,
        as_self: bool = False,
    ) -> Value:
        if fn.qualname in self._active or frame.depth >= MAX_INLINE_DEPTH:
            return UnknownV(f"recursive or too deeply nested call to `{fn.qualname}`")
        bound = self.bind_params(fn, args, kwargs, state, frame, receiver)
        if isinstance(bound, UnknownV):
            return bound
        callee = Frame(fn, (*frame.chain, fn.qualname), frame.depth + 1)
        # A method of this class (or of a base, through `self` or `super()`) shares our `self`;
        # a function of another class or module (a width function) does not.
        own = receiver is None and (
            as_self or fn.owner == self.class_name or fn in self.methods.values()
        )
        if own:
            bound.update(self_part(state.env))
        outer_methods = self.methods
        if not own:
            self.methods = {}
        try:
            value, out_pc = self._run_frame(callee, bound, state.pc)
        finally:
            self.methods = outer_methods
        if own:
            state.env.update(
                merged_self_part(
                    [(relative_to(p, state.pc), part) for p, part in callee.exits], state.env
                )
            )
        if out_pc == FALSE:
            state.alive = False
        elif out_pc != state.pc:
            state.pc = out_pc
        return value

    def bind_params(
        self,
        fn: FunctionSource,
        args: list[Value],
        kwargs: dict[str, Value],
        state: State,
        frame: Frame,
        receiver: Value | None = None,
    ) -> dict[str, Value] | UnknownV:
        params = fn.node.params
        positional = [*params.posonly_params, *params.params]
        bound: dict[str, Value] = {}
        if positional and positional[0].name.value in ("self", "cls") and fn.owner is not None:
            bound[positional[0].name.value] = receiver if receiver is not None else SelfV()
            positional = positional[1:]
        if (
            params.star_arg is not None and type(params.star_arg) is cst.Param
        ) or params.star_kwarg is not None:
            if len(args) > len(positional):
                return UnknownV(f"`{fn.qualname}` takes *args")
        remaining = list(args)
        for param in positional:
            if remaining:
                bound[param.name.value] = remaining.pop(0)
        for key, value in kwargs.items():
            bound[key] = value
        for param in [*positional, *params.kwonly_params]:
            name = param.name.value
            if name not in bound:
                if param.default is not None:
                    default_state = State({}, state.pc)
                    bound[name] = self.eval(
                        param.default, default_state, Frame(fn, frame.chain, frame.depth)
                    )
                else:
                    bound[name] = UnknownV(f"parameter `{name}` of `{fn.qualname}` is not passed")
        return bound


# A string literal's value by its source text: `SimpleString.evaluated_value` runs
# `ast.literal_eval` at each read, and a method's literals are read again each time the method
# is interpreted (bench/RESULTS.md, "What each change did").
_STRING_VALUES: dict[str, Value] = {}
_MAX_STRING_VALUES = 100_000


def _is_tensorish(value: Value) -> bool:
    return (isinstance(value, RuntimeV) and value.length is not None) or isinstance(
        value, (BufferV,)
    )


def _runtime_like(left: Value, right: Value) -> Value:
    for value in (left, right):
        if isinstance(value, RuntimeV):
            return RuntimeV(f"({value.path})", value.length)
    return RuntimeV("tensor expression")


def _dotted(node: cst.BaseExpression) -> str | None:
    """A name or a chain of attributes as written (`self.forward_metadata`), else None."""
    # Exact types (tests/test_libcst_leaves.py: libcst subclasses none of them): `isinstance`
    # with a libcst class that fails goes through `ABCMeta.__instancecheck__`, a Python call,
    # and these helpers are asked millions of times in a scan.
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _receiver(func: Value) -> Value:
    """What a method is called on, on each path (a value that is no bound method is itself
    what the call reaches: a runtime tensor, something not modelled)."""
    if isinstance(func, BoundMethodV):
        return func.receiver
    if isinstance(func, ChoiceV):
        return ChoiceV(tuple((c, _receiver(v)) for c, v in func.alts))
    return func


def _self_attr_name(node: cst.BaseExpression) -> str | None:
    """`self.<attr>` written as such: the attribute's name."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _base_name(node: cst.BaseExpression) -> str | None:
    while type(node) is cst.Subscript:  # exact types, as in `_dotted`
        node = node.value
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def _binop_name(op: cst.BaseBinaryOp | cst.BaseAugOp) -> str | None:
    return {
        cst.Add: "+",
        cst.Subtract: "-",
        cst.Multiply: "*",
        cst.FloorDivide: "//",
        cst.Modulo: "%",
        cst.AddAssign: "+",
        cst.SubtractAssign: "-",
        cst.MultiplyAssign: "*",
        cst.FloorDivideAssign: "//",
        cst.ModuloAssign: "%",
    }.get(type(op))


def _cmp_name(op: cst.BaseCompOp) -> str | None:
    return {
        cst.Equal: "==",
        cst.NotEqual: "!=",
        cst.LessThan: "<",
        cst.LessThanEqual: "<=",
        cst.GreaterThan: ">",
        cst.GreaterThanEqual: ">=",
    }.get(type(op))


def _op_text(op: cst.BaseCompOp) -> str:
    return {
        cst.Equal: "==",
        cst.NotEqual: "!=",
        cst.LessThan: "<",
        cst.LessThanEqual: "<=",
        cst.GreaterThan: ">",
        cst.GreaterThanEqual: ">=",
        cst.In: "in",
        cst.NotIn: "not in",
        cst.Is: "is",
        cst.IsNot: "is not",
    }.get(type(op), "?")


def _describe(node: cst.CSTNode) -> str:
    return {
        "Yield": "a yield expression",
        "StarredElement": "a starred expression",
    }.get(type(node).__name__, f"a `{type(node).__name__}` expression")


def _algorithm_is(formula: Formula, member: str) -> Formula:
    """A formula over the shared `algo:` conditions for the algorithm `member`."""

    def leaf(f: Formula) -> Formula | None:
        if isinstance(f, Atom) and f.key.startswith(ALGORITHM_ATOM):
            return BoolConst(f.key == ALGORITHM_ATOM + member)
        return None

    return Rewriter(formula_leaf=leaf).formula(formula)


def _algorithm_equal(
    left: AlgorithmV, right: AlgorithmV, algorithms: AlgorithmOracle | None
) -> Formula | None:
    """`a == b` of two algorithms (members or the server's), not of their names."""
    if left.name or right.name or algorithms is None:
        return None
    if left.member and right.member:
        return BoolConst(left.member == right.member)
    member = left.member or right.member
    if not member:
        return TRUE
    return algorithms.over_atoms(ModeIs(frozenset({member})))


def _kind(value: Value) -> str:
    return {
        "LayoutV": "an index vector",
        "BufferV": "a buffer",
        "ConstVecV": "a constant vector",
        "TupleV": "a tuple",
        "DictV": "a dict",
        "ObjectV": "an object",
        "StrV": "a string",
        "CurrentModeV": "the forward mode",
        "MemberV": "a forward-mode member",
    }.get(type(value).__name__, "a value")
