"""Functions of the scanned tree called from the code interpreted: a module-level function of
the same file, or one imported from another file of the tree (`from .utils import f`,
`import pkg.mod as m; m.f(...)`), found by `source.modules.FunctionIndex` and interpreted with
the caller's arguments (positional, keyword, defaults), as a helper of the same class is. Each
call is resolved from the file of the function that makes it, so that a helper's own calls
follow its file's imports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from idxcheck.interp.state import Binding, Frame, ScanContext, State
from idxcheck.interp.values import FunctionRefV, IntV, ModuleV, SelfV, TupleV, UnknownV, Value
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import FunctionSource, SourceError
from idxcheck.sym.terms import strip

if TYPE_CHECKING:
    import libcst as cst


class ClassInterpreter(Protocol):
    """What following a call needs of `interpreter.ClassInterpreter` (which imports this)."""

    ctx: ScanContext
    profile: Profile
    bindings: list[Binding]
    tree_calls: list[FunctionSource]

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
    ) -> Value: ...

    def tag(self, value: Value, node: cst.BaseExpression, frame: Frame) -> Value: ...


# How many functions of the tree a call may be nested in (a helper calling a helper ...): the
# calls below it are not followed, and what they return is UNSUPPORTED with this reason.
MAX_FUNCTION_DEPTH = 4


def tree_name(interp: ClassInterpreter, name: str, frame: Frame) -> Value | None:
    """What a name bound nowhere in the function stands for when the file of `frame` defines
    it at module level or imports it from the tree: a function (resolved where it is called),
    a module of the tree, or, for an import that leads to no function, why not. None: neither
    (the caller says the name is not defined)."""
    index = interp.ctx.functions
    if index is None:
        return None
    if index.module_alias(name, frame.fn.file):
        return ModuleV(name)
    resolved = index.lookup(name, frame.fn.file)
    if resolved is None:
        return None
    if resolved.definition is None:
        return UnknownV(resolved.reason)
    return FunctionRefV(name)


def call_tree_function(
    interp: ClassInterpreter,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: cst.Call,
    state: State,
    frame: Frame,
) -> Value | None:
    """The value of a call of the tree function `name` (`f`, `m.f`), interpreted with the
    caller's arguments; None where `name` is no function of the tree."""
    index = interp.ctx.functions
    if index is None:
        return None
    resolved = index.lookup(name, frame.fn.file)
    if resolved is None:
        return None
    if resolved.definition is None:
        return UnknownV(f"call to `{name}`: {resolved.reason}")
    try:
        fn = resolved.function()
    except SourceError as exc:
        return UnknownV(f"call to `{name}`: {exc}")
    active = interp.tree_calls
    if any(other is fn for other in active):
        path = " -> ".join([*(f.name for f in active), fn.name])
        return UnknownV(f"recursive call to `{fn.name}` ({path}) is not followed")
    if len(active) >= MAX_FUNCTION_DEPTH:
        return UnknownV(
            f"call to `{fn.name}` nested in more than {MAX_FUNCTION_DEPTH} functions of the "
            "scanned tree is not followed"
        )
    # A function handed the caller's `self` (`build(self, bs)`) reads and writes that object:
    # it shares the caller's attributes and methods, as a helper method does.
    shares_self = any(isinstance(v, SelfV) for v in [*args, *kwargs.values()])
    start = len(interp.bindings)
    active.append(fn)
    try:
        value = interp.inline(fn, args, kwargs, node, state, frame, as_self=shares_self)
    finally:
        active.pop()
    _drop_passed_through(interp, start, kwargs)
    return _through(interp, value, node, frame)


def _through(interp: ClassInterpreter, value: Value, node: cst.Call, frame: Frame) -> Value:
    """The returned integers (a tuple's too) tagged with the call: the place a finding names
    as the call that gave the value (`starts, rows = layout(...)` tags no call itself)."""
    if isinstance(value, TupleV):
        return TupleV(tuple(_through(interp, item, node, frame) for item in value.items))
    return interp.tag(value, node, frame)


def _drop_passed_through(interp: ClassInterpreter, start: int, kwargs: dict[str, Value]) -> None:
    """The bindings made inside the function of a value its caller passed by a keyword that
    named a role (`wrapper(max_seqlen_q=n)` handing `n` on to a kernel): the call bound that
    value already, and a wrapper with two sinks would count each site two more times."""
    passed = [
        (role, value) for key, value in kwargs.items() if (role := interp.profile.role_of(key))
    ]
    if not passed:
        return
    kept = [
        b
        for b in interp.bindings[start:]
        if not any(role == b.role and _same(value, b.value) for role, value in passed)
    ]
    interp.bindings[start:] = kept


def _same(passed: Value, bound: Value) -> bool:
    if passed is bound:
        return True
    if isinstance(passed, IntV) and isinstance(bound, IntV):
        return strip(passed.term) == strip(bound.term)
    return False
