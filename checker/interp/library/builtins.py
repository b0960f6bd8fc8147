"""Python's builtins as a backend uses them on sizes and flags: `max`/`min`, `int`, `len`,
`getattr`, `hasattr`, `isinstance`, `sum`, `bool`, `super`."""

from __future__ import annotations

from idxcheck.interp.choices import map_choice, merge
from idxcheck.interp.library.call import Call, FunctionModel, length_of
from idxcheck.interp.values import (
    BoolV,
    BufferV,
    ChoiceV,
    ConstVecV,
    IntV,
    LayoutV,
    RuntimeV,
    SelfV,
    StrV,
    SuperV,
    TupleV,
    UnboundV,
    UnknownV,
    Value,
)
from idxcheck.sym.terms import FALSE, Atom, Const, RuntimeInt, binop


def minmax(call: Call) -> Value:
    name, args = call.name, list(call.args)
    if "key" in call.kwargs:
        return UnknownV(f"`{name}()` with a `key=` function")
    if len(args) == 1:
        if isinstance(args[0], ChoiceV):
            # One iterable per path: the extreme of each (a condition picks the path).
            return map_choice(args[0], lambda only: _of_one(call, only))
        return _of_one(call, args[0])
    return _of_many(call, args)


def _of_one(call: Call, only: Value) -> Value:
    """`max(xs)`, `min(xs)` of one iterable."""
    name = call.name
    if isinstance(only, RuntimeV):
        return IntV(RuntimeInt(f"{name}({only.path})"))
    if isinstance(only, TupleV):
        if only.items:
            return _of_many(call, list(only.items))
        if "default" in call.kwargs:
            return call.kwargs["default"]  # an empty sequence gives the default
        return UnknownV(f"`{name}()` of an empty sequence")
    if isinstance(only, ConstVecV) and "default" not in call.kwargs:
        # Every entry is the value (an empty vector raises, so a result is the value).
        return IntV(only.value)
    if isinstance(only, UnknownV):
        return UnknownV(f"`{name}()` of a value that is not modelled: {only.reason}")
    return UnknownV(f"`{name}()` of one value that is not from the runtime")


def _of_many(call: Call, args: list[Value]) -> Value:
    name = call.name
    if len(args) < 2:
        if len(args) == 1 and isinstance(args[0], IntV):
            return args[0]  # the extreme of one integer is itself
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
    if args and isinstance(args[0], ChoiceV):
        return map_choice(args[0], lambda one: _integer_of(call, one))
    return _integer_of(call, args[0] if args else None)


def _integer_of(call: Call, value: Value | None) -> Value:
    if isinstance(value, (IntV, RuntimeV, UnknownV)):
        return value if not isinstance(value, RuntimeV) else IntV(RuntimeInt(value.path))
    return UnknownV(f"`{call.name}()` of a non-integer")


def length(call: Call) -> Value:
    if call.args and isinstance(call.args[0], ChoiceV):
        # A value that differs by path: the length of each.
        return map_choice(call.args[0], lambda one: _length_of(one))
    return _length_of(call.args[0] if call.args else None)


def _length_of(value: Value | None) -> Value:
    if isinstance(value, (UnknownV, UnboundV)):
        return value  # its reason; a path that never assigned it raises before the call
    if value is not None:
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
