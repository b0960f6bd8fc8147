"""What torch and numpy share: index ranges, cumulative sums, fills and allocations."""

from __future__ import annotations

from idxcheck.interp.choices import map_choice
from idxcheck.interp.entries import entries_of
from idxcheck.interp.library.call import Call, first_dim
from idxcheck.interp.values import (
    BufferV,
    ChoiceV,
    ConstVecV,
    IntV,
    LayoutV,
    RuntimeV,
    TupleV,
    UnknownV,
    Value,
)
from idxcheck.sym.terms import Const, Term


def arange(call: Call) -> Value:
    """`arange(end)`, `arange(start, end[, step])`, with keywords: a uniform layout."""
    positional = list(call.args)
    kwargs = call.kwargs
    start_v: Value = kwargs.get("start", IntV(Const(0)))
    end_v: Value | None = kwargs.get("end")
    step_v: Value = kwargs.get("step", IntV(Const(1)))
    if len(positional) == 1 and end_v is None:
        end_v = positional[0]
    elif len(positional) >= 2:
        start_v, end_v = positional[0], positional[1]
        if len(positional) >= 3:
            step_v = positional[2]
    elif len(positional) == 1:
        start_v = positional[0]
    if end_v is None:
        return UnknownV("arange without an end")
    interp = call.interp
    start, end, step = interp.to_term(start_v), interp.to_term(end_v), interp.to_term(step_v)
    text = call.text()
    if any(isinstance(v, RuntimeV) for v in (start_v, end_v, step_v)) and not isinstance(
        step_v, IntV
    ):
        return RuntimeV(f"arange({text})")
    return LayoutV(start, step, entries_of(start, end, step), call.loc(), text, "arange")


def cumsum(call: Call) -> Value:
    return cumsum_of(call, call.arg(0, "input", UnknownV("cumsum without input")))


def cumsum_of(call: Call, source: Value) -> Value:
    if isinstance(source, ChoiceV):
        return map_choice(source, lambda v: cumsum_of(call, v))
    if isinstance(source, ConstVecV):
        # cumsum of n repeated: [n, 2n, ..., len * n]
        return LayoutV(source.value, source.value, source.length, call.loc(), call.text(), "cumsum")
    if isinstance(source, RuntimeV):
        return RuntimeV(f"cumsum({source.path})", source.length)
    if isinstance(source, UnknownV):
        return UnknownV(f"cumsum of a value that is not modelled: {source.reason}")
    return UnknownV("cumsum of a value that is not a vector")


def full(call: Call) -> Value:
    size = call.arg(0, "size", UnknownV("full without size"))
    fill = call.arg(1, "fill_value", UnknownV("full without value"))
    length = first_dim(size)
    if isinstance(fill, IntV):
        return ConstVecV(fill.term, length)
    if isinstance(fill, RuntimeV):
        return RuntimeV("full()", length)
    return UnknownV("torch.full of an unknown value")


def allocate(call: Call) -> Value:
    """`zeros`, `empty`, `ones`: a buffer of the first dimension (ones: a constant vector)."""
    size = call.arg(0, "size", UnknownV("allocation without size"))
    length = first_dim(size)
    if call.short == "ones" and length is not None:
        return ConstVecV(Const(1), length)
    return BufferV(call.text(), length, call.loc(), length, Const(0), _shape(call, size))


def _shape(call: Call, size: Value) -> tuple[Term, ...]:
    """Each dimension of an allocation: `zeros((a, b))`, `zeros(a, b)`, `zeros(n)`; a
    dimension the interpreter does not model is the term saying why."""
    if isinstance(size, TupleV):
        dims: list[Value] = list(size.items)
    elif len(call.args) > 1 and call.name.startswith("torch."):
        dims = list(call.args)  # torch's sizes as separate arguments (numpy's second is a dtype)
    else:
        dims = [size]
    return tuple(call.interp.to_term(dim) for dim in dims) or (Const(1),)
