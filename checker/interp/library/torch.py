"""torch: its functions (`torch.arange`, `F.pad`, ...), the methods of its tensors, and what a
torch function of a runtime tensor gives (a runtime value)."""

from __future__ import annotations

from idxcheck.interp.choices import map_choice
from idxcheck.interp.library import arrays
from idxcheck.interp.library.call import Call, FunctionModel, length_of
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
from idxcheck.sym.terms import Const, binop, const_value, strip

# Methods that give the tensor itself, as far as its layout goes.
TENSOR_IDENTITY_METHODS = frozenset(
    {
        "to",
        "int",
        "long",
        "clone",
        "contiguous",
        "cuda",
        "cpu",
        "detach",
        "type",
        "pin_memory",
        "flatten",
        "squeeze",
        "__getitem__",
    }
)
# Methods of a runtime tensor whose result is known when its length is.
RUNTIME_TENSOR_METHODS = (
    frozenset({"numel", "size", "__len__", "cumsum", "view", "reshape"}) | TENSOR_IDENTITY_METHODS
)
# Methods that write their receiver in place (and give it back).
IN_PLACE_METHODS = frozenset({"copy_", "fill_", "zero_", "index_copy_", "scatter_", "masked_fill_"})


def pad(call: Call) -> Value:
    source = call.args[0] if call.args else UnknownV("pad without input")
    widths = call.arg(1, "pad", UnknownV("pad without widths"))
    return pad_of(call, source, widths)


def pad_of(call: Call, source: Value, widths: Value) -> Value:
    """`F.pad(x, (1, 0))` of a layout that starts at its stride: the same layout from 0."""
    if isinstance(source, ChoiceV):
        return map_choice(source, lambda v: pad_of(call, v, widths))
    to_term = call.interp.to_term
    if isinstance(source, LayoutV) and isinstance(widths, TupleV) and len(widths.items) == 2:
        before = const_value(to_term(widths.items[0]))
        after = const_value(to_term(widths.items[1]))
        if (
            before == 1 and after == 0 and const_value(binop("-", source.start, source.stride)) == 0
        ) or (before == 1 and after == 0 and strip(source.start) == strip(source.stride)):
            entries = binop("+", source.entries, Const(1)) if source.entries is not None else None
            return LayoutV(Const(0), source.stride, entries, source.loc, source.text, source.source)
    if isinstance(source, (RuntimeV, BufferV)):
        # A vector padded by (before, after) entries (a negative width crops): as long as the
        # two widths add; what it holds is the runtime's where the source was, else unknown.
        length = source.length
        if length is not None and isinstance(widths, TupleV) and len(widths.items) == 2:
            if all(isinstance(w, (IntV, ChoiceV)) for w in widths.items):
                length = binop(
                    "+", length, binop("+", to_term(widths.items[0]), to_term(widths.items[1]))
                )
            else:
                length = None
        else:
            length = None
        if isinstance(source, RuntimeV):
            return RuntimeV(f"pad({source.path})", length)
        return BufferV(f"pad({source.name})", length)
    if isinstance(source, UnknownV):
        return UnknownV(f"padding a value that is not modelled: {source.reason}")
    return UnknownV("padding a value that is not a uniform layout")


def tensor_method(call: Call, receiver: LayoutV | BufferV | ConstVecV) -> Value:
    """A method of a tensor the backend builds: its length, a cumulative sum, itself."""
    name, args = call.short, call.args
    to_term = call.interp.to_term
    if name in TENSOR_IDENTITY_METHODS:
        return receiver
    if name in ("numel", "__len__") or (
        name == "size" and (not args or const_value(to_term(args[0])) == 0)
    ):
        length = length_of(receiver)
        return IntV(length) if length is not None else UnknownV("a tensor of unknown length")
    if name == "cumsum" and isinstance(receiver, ConstVecV):
        return arrays.cumsum_of(call, receiver)
    if name in ("max", "min", "amax", "amin") and not args and isinstance(receiver, ConstVecV):
        return IntV(receiver.value)  # every entry is the value (an empty vector raises)
    if name == "view" and args and const_value(to_term(args[0])) == -1:
        return receiver
    return UnknownV(f"tensor method `{name}` is not modelled")


def runtime_method(call: Call, receiver: RuntimeV) -> Value:
    """A method of a tensor the runtime passes in: its length when known, else a runtime
    value."""
    name, args = call.short, call.args
    if (
        name in ("numel", "size", "__len__")
        and receiver.length is not None
        and not (
            name == "size" and args and const_value(call.interp.to_term(args[0])) not in (0, None)
        )
    ):
        return IntV(receiver.length)
    if name == "cumsum":
        return RuntimeV(f"cumsum({receiver.path})", receiver.length)
    if name in TENSOR_IDENTITY_METHODS or name in ("view", "reshape"):
        return receiver
    return RuntimeV(f"{receiver.path}.{name}()")


def of_runtime(call: Call) -> Value | None:
    """A torch function of a runtime tensor: a runtime value (None: not such a call)."""
    if call.name == "torch.as_tensor" and call.args and isinstance(call.args[0], RuntimeV):
        return call.args[0]  # the same values as a tensor: what they are stays known
    if call.name.startswith("torch.") and any(isinstance(a, RuntimeV) for a in call.args):
        return RuntimeV(f"{call.name}()", None)
    return None


FUNCTIONS: dict[str, FunctionModel] = {
    "torch.arange": arrays.arange,
    "arange": arrays.arange,
    "torch.cumsum": arrays.cumsum,
    "torch.full": arrays.full,
    "torch.zeros": arrays.allocate,
    "torch.empty": arrays.allocate,
    "torch.ones": arrays.allocate,
    "torch.nn.functional.pad": pad,
    "F.pad": pad,
    "nn.functional.pad": pad,
    "pad": pad,
}
