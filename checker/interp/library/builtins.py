"""Python's builtins as a backend uses them on sizes and flags: `max`/`min`, `int`, `len`,
`getattr`, `hasattr`, `isinstance`, `sum`, `bool`, `super`."""

from __future__ import annotations

from idxcheck.interp.choices import merge
from idxcheck.interp.library.call import Call, FunctionModel, length_of
from idxcheck.interp.values import (
    BoolV,
    BufferV,
    ConstVecV,
    IntV,
    LayoutV,
    RuntimeV,
    SelfV,
    StrV,
    SuperV,
    TupleV,
    UnknownV,
    Value,
)
from idxcheck.sym.terms import FALSE, Atom, Const, RuntimeInt, binop


def minmax(call: Call) -> Value:
    name, args = call.name, list(call.args)
    if len(args) == 1:
        only = args[0]
        if isinstance(only, RuntimeV):
            return IntV(RuntimeInt(f"{name}({only.path})"))
        if isinstance(only, TupleV) and only.items:
            args = list(only.items)
        else:
            return UnknownV(f"`{name}()` of one value that is not from the runtime")
    if len(args) < 2:
        return UnknownV(f"`{name}()` with no arguments")
    to_term = call.interp.to_term
    result = args[0]
    for other in args[1:]:
        if isinstance(result, IntV) and isinstance(other, IntV):
            result = IntV(binop(name, result.term, other.term))
        elif isinstance(result, (IntV, RuntimeV, UnknownV)) and isinstance(
            other, (IntV, RuntimeV, UnknownV)
        ):
            result = IntV(binop(name, to_term(result), to_term(other)))
        else:
            return UnknownV(f"`{name}()` of values that are not integers")
    return result


def integer(call: Call) -> Value:
    """`int(x)`, `round(x)`: an integer stays itself, a runtime value becomes a runtime int."""
    args = call.args
    if args and isinstance(args[0], (IntV, RuntimeV, UnknownV)):
        return args[0] if not isinstance(args[0], RuntimeV) else IntV(RuntimeInt(args[0].path))
    return UnknownV(f"`{call.name}()` of a non-integer")


def length(call: Call) -> Value:
    if call.args:
        value = call.args[0]
        if isinstance(value, TupleV):
            return IntV(Const(len(value.items)))
        found = (
            length_of(value) if isinstance(value, (LayoutV, BufferV, ConstVecV, RuntimeV)) else None
        )
        if found is not None:
            return IntV(found)
        if isinstance(value, RuntimeV):
            return IntV(RuntimeInt(f"len({value.path})"))
    return UnknownV("`len()` of a value of unknown length")


def get_attribute(call: Call) -> Value:
    """`getattr(obj, "name"[, default])`; on `self`, an attribute not assigned is the default
    where `hasattr` fails."""
    args = call.args
    if len(args) >= 2 and isinstance(args[1], StrV):
        found = call.interp.attribute(args[0], args[1].value, None, call.frame)
        if isinstance(found, UnknownV) and len(args) == 3 and isinstance(args[0], SelfV):
            return merge(
                Atom(
                    f"{call.interp.class_name}:hasattr:{args[1].value}",
                    f"hasattr(self, {args[1].value!r})",
                ),
                found,
                args[2],
            )
        return found
    return UnknownV("getattr with a non-constant name")


def opaque_test(call: Call) -> Value:
    """`hasattr(...)`, `isinstance(...)`: an opaque condition, the same wherever it is asked of
    the same values."""
    text = call.text()
    return BoolV(Atom(call.interp.atom_key(text, call.frame, *call.args), text))


def total(call: Call) -> Value:
    args = call.args
    if args and isinstance(args[0], RuntimeV):
        return IntV(RuntimeInt(f"sum({args[0].path})"))
    return UnknownV("`sum()` of a value that is not from the runtime")


def truth(call: Call) -> Value:
    if not call.args:
        return BoolV(FALSE)
    return BoolV(call.interp.truth(call.args[0], call.node.args[0].value, call.frame))


def super_(call: Call) -> Value:
    return SuperV()


FUNCTIONS: dict[str, FunctionModel] = {
    "max": minmax,
    "min": minmax,
    "int": integer,
    "round": integer,
    "len": length,
    "getattr": get_attribute,
    "hasattr": opaque_test,
    "isinstance": opaque_test,
    "sum": total,
    "bool": truth,
    "super": super_,
}
