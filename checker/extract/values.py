"""The abstract values the method interpreter computes with.

An expression evaluates to one of these: an integer term, a condition, a uniform index layout
(what `arange(0, bs * n + 1, n)` builds), a runtime object (the forward batch, `spec_info`),
a preallocated buffer, a metadata object, ... or `UnknownV` with the reason it could not be
modelled. `ChoiceV` holds the alternatives of a value that differs between paths."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import libcst as cst

from idxcheck.spans import Loc
from idxcheck.sym.terms import Formula, Term


@dataclass(frozen=True)
class IntV:
    term: Term


@dataclass(frozen=True)
class BoolV:
    formula: Formula


@dataclass(frozen=True)
class NoneV:
    pass


@dataclass(frozen=True)
class StrV:
    value: str


@dataclass(frozen=True)
class CurrentModeV:
    """The forward mode of the batch being processed (the mode under check)."""


@dataclass(frozen=True)
class MemberV:
    """`ForwardMode.X`."""

    name: str


@dataclass(frozen=True)
class ModeEnumV:
    """The `ForwardMode` class itself."""


@dataclass(frozen=True)
class LayoutV:
    """A uniform index vector: entry i is `start + i * stride`, for i < `entries`.

    `entries` is None when the length is not known exactly. `loc` is where it was built."""

    start: Term
    stride: Term
    entries: Term | None
    loc: Loc
    text: str
    source: str  # "arange" | "cumsum" | "scaled"


@dataclass(frozen=True)
class ConstVecV:
    """A vector of `length` copies of `value` (`torch.full((bs,), n)`)."""

    value: Term
    length: Term | None


@dataclass(frozen=True)
class RuntimeV:
    """Something the runtime passes in (`forward_batch`, `spec_info`, `seq_lens`): its values
    come from the real layout. `path` names it for opaque conditions; `length` is its first
    dimension when known."""

    path: str
    length: Term | None = None


@dataclass(frozen=True)
class ConfigV:
    """An object whose attributes are configuration values (`model_runner.server_args`)."""

    path: str


@dataclass(frozen=True)
class BufferV:
    """A tensor allocated with a known first dimension (`torch.zeros((max_bs + 1,))`)."""

    name: str
    length: Term | None
    loc: Loc | None = None


@dataclass(frozen=True)
class TupleV:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class DictV:
    items: tuple[tuple[str, Value], ...]

    def get(self, key: str) -> Value | None:
        for k, v in self.items:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class ObjectV:
    """An instance of a metadata class built in the analysed code."""

    cls: str
    fields: tuple[tuple[str, Value], ...]

    def get(self, name: str) -> Value | None:
        for k, v in self.fields:
            if k == name:
                return v
        return None

    def with_field(self, name: str, value: Value) -> ObjectV:
        rest = tuple((k, v) for k, v in self.fields if k != name)
        return ObjectV(self.cls, (*rest, (name, value)))


@dataclass(frozen=True)
class SelfV:
    pass


@dataclass(frozen=True)
class ModuleV:
    """A module or namespace the interpreter knows calls of (`torch`, `np`, `triton`)."""

    name: str


@dataclass(frozen=True)
class ClassRefV:
    """A class named in the analysed code, possibly a known dataclass."""

    name: str


@dataclass(frozen=True)
class BoundMethodV:
    receiver: Value
    name: str


@dataclass(frozen=True)
class FunctionRefV:
    """A function of the scanned module (`def helper(...)` at top level)."""

    name: str


@dataclass(frozen=True)
class UnknownV:
    reason: str


@dataclass(frozen=True)
class ChoiceV:
    """One of `alts`, depending on which condition holds (the conditions are exclusive)."""

    alts: tuple[tuple[Formula, Value], ...]


Value = Union[
    IntV,
    BoolV,
    NoneV,
    StrV,
    CurrentModeV,
    MemberV,
    ModeEnumV,
    LayoutV,
    ConstVecV,
    RuntimeV,
    ConfigV,
    BufferV,
    TupleV,
    DictV,
    ObjectV,
    SelfV,
    ModuleV,
    ClassRefV,
    BoundMethodV,
    FunctionRefV,
    UnknownV,
    ChoiceV,
]


def describe(node: cst.CSTNode) -> str:
    return type(node).__name__
