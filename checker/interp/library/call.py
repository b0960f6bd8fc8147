"""What a model of a library call is handed: the call, its evaluated arguments, and the few
services of the interpreter a model may use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from idxcheck.interp.choices import iter_choice
from idxcheck.interp.state import Frame, State
from idxcheck.interp.values import BufferV, ConstVecV, IntV, LayoutV, RuntimeV, TupleV, Value
from idxcheck.model.spans import Loc
from idxcheck.sym.terms import TRUE, Formula, Term

if TYPE_CHECKING:
    import libcst as cst


class Interpreter(Protocol):
    """The interpreter's services a model may use."""

    @property
    def class_name(self) -> str: ...

    def to_term(self, value: Value) -> Term: ...

    def attribute(
        self, base: Value, attr: str, node: cst.CSTNode | None, frame: Frame | None
    ) -> Value: ...

    def atom_key(self, text: str, frame: Frame, *values: Value) -> str: ...

    def truth(self, value: Value, node: cst.BaseExpression, frame: Frame) -> Formula: ...


@dataclass(frozen=True)
class Call:
    """A call of a library function or method, its arguments evaluated."""

    interp: Interpreter
    name: str  # dotted, as resolved (`torch.arange`, `F.pad`, `len`)
    args: list[Value]
    kwargs: dict[str, Value]
    node: cst.Call
    state: State
    frame: Frame

    @property
    def short(self) -> str:
        return self.name.split(".")[-1]

    def loc(self) -> Loc:
        return self.frame.fn.loc(self.node)

    def text(self) -> str:
        """The call's source, on one line and clipped, for messages and opaque conditions."""
        return short_text(self.frame.fn.code(self.node))

    def arg(self, index: int, keyword: str, missing: Value) -> Value:
        """The argument at `index`, else the keyword, else `missing`."""
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(keyword, missing)


# A model gives the call's value; `None` from a matcher's model is never used.
FunctionModel = Callable[[Call], Value]


def short_text(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def length_of(value: Value) -> Term | None:
    if isinstance(value, LayoutV):
        return value.entries
    if isinstance(value, (BufferV, ConstVecV, RuntimeV)):
        return value.length
    return None


def length_of_value(value: Value) -> Term | None:
    alts = list(iter_choice(value, TRUE))
    if len(alts) == 1 and isinstance(alts[0][1], (LayoutV, BufferV, ConstVecV, RuntimeV)):
        return length_of(alts[0][1])
    return None


def first_dim(size: Value) -> Term | None:
    if isinstance(size, IntV):
        return size.term
    if isinstance(size, TupleV) and size.items and isinstance(size.items[0], IntV):
        return size.items[0].term
    return None
