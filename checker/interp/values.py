"""The abstract values the method interpreter computes with.

An expression evaluates to one of these: an integer term, a condition, a uniform index layout
(what `arange(0, bs * n + 1, n)` builds), a runtime object (the forward batch, `spec_info`),
a preallocated buffer, a metadata object, ... or `UnknownV` with the reason it could not be
modelled. `ChoiceV` holds the alternatives of a value that differs between paths."""

from __future__ import annotations

from idxcheck.model.spans import Loc
from idxcheck.sym.node import node
from idxcheck.sym.terms import Formula, Term


@node
class IntV:
    term: Term


@node
class BoolV:
    formula: Formula


@node
class NoneV:
    pass


@node
class StrV:
    value: str


@node
class CurrentModeV:
    """The forward mode of the batch being processed (the mode under check)."""


@node
class MemberV:
    """`ForwardMode.X`."""

    name: str


@node
class ModeEnumV:
    """The `ForwardMode` class itself."""


@node
class AlgorithmV:
    """A speculative algorithm: `member` of the tree's enum (`SpeculativeAlgorithm.EAGLE`), or
    with `member` "" the one the server runs (`model_runner.spec_algorithm`, the configured
    name parsed by `SpeculativeAlgorithm.from_string`), one for the whole server. `name`: the
    configured name itself, before it is parsed (None where none is set)."""

    member: str = ""
    name: bool = False


@node
class AlgorithmEnumV:
    """The speculative-algorithm enum class itself."""


@node
class LayoutV:
    """A uniform index vector: entry i is `start + i * stride`, for i < `entries`.

    `entries` is None when the length is not known exactly. `loc` is where it was built."""

    start: Term
    stride: Term
    entries: Term | None
    loc: Loc
    text: str
    source: str  # "arange" | "cumsum" | "scaled"


@node
class ConstVecV:
    """A vector of `length` copies of `value` (`torch.full((bs,), n)`)."""

    value: Term
    length: Term | None


@node
class RankCountsV:
    """The token counts of the data-parallel ranks, of which only this rank's entry is known
    (`this`): reading it at any index gives that entry (the runtime reads it at its own rank),
    and nothing else is modelled (the largest entry is another rank's). It may also be None
    (`source` returns None with one rank): whether it is, is an opaque condition."""

    this: Term
    source: str


@node
class RuntimeV:
    """Something the runtime passes in (`forward_batch`, `spec_info`, `seq_lens`): its values
    come from the real layout. `path` names it for opaque conditions; `length` is its first
    dimension when known."""

    path: str
    length: Term | None = None


@node
class ConfigV:
    """An object whose attributes are configuration values (`model_runner.server_args`)."""

    path: str


@node
class BufferV:
    """A tensor allocated with a known first dimension (`torch.zeros((max_bs + 1,))`)."""

    name: str
    length: Term | None
    loc: Loc | None = None
    # The storage it views: allocated with `capacity` entries, this view starting at `offset`.
    capacity: Term | None = None
    offset: Term | None = None
    # Every dimension of the allocation while this value is the whole of it (not a view of a
    # part): what a writer it is handed to may fill. A dimension not modelled is an `Unknown`
    # (or runtime) term; None for a view, or a buffer not made by an allocation.
    shape: tuple[Term, ...] | None = None


@node
class TupleV:
    items: tuple[Value, ...]


@node
class DictV:
    items: tuple[tuple[str, Value], ...]

    def get(self, key: str) -> Value | None:
        for k, v in self.items:
            if k == key:
                return v
        return None


@node
class ObjectV:
    """An instance of a metadata class built in the analysed code."""

    cls: str
    fields: tuple[tuple[str, Value], ...]
    origin: Loc | None = None  # where it was constructed: the group its fields belong to

    def get(self, name: str) -> Value | None:
        for k, v in self.fields:
            if k == name:
                return v
        return None

    def with_field(self, name: str, value: Value) -> ObjectV:
        rest = tuple((k, v) for k, v in self.fields if k != name)
        return ObjectV(self.cls, (*rest, (name, value)), self.origin)


@node
class SelfV:
    pass


@node
class SuperV:
    """`super()`: methods of the base classes found in the scanned tree."""


@node
class ModuleV:
    """A module or namespace the interpreter knows calls of (`torch`, `np`, `triton`)."""

    name: str


@node
class ClassRefV:
    """A class named in the analysed code, possibly a known dataclass."""

    name: str


@node
class BoundMethodV:
    receiver: Value
    name: str


@node
class FunctionRefV:
    """A function of the scanned module (`def helper(...)` at top level)."""

    name: str


@node
class UnknownV:
    reason: str


@node
class UnboundV:
    """A local not assigned on this path: reading it raises NameError, so a path that reads it
    never reaches what follows."""


@node
class ChoiceV:
    """One of `alts`, depending on which condition holds (the conditions are exclusive)."""

    alts: tuple[tuple[Formula, Value], ...]


Value = (
    IntV
    | BoolV
    | NoneV
    | StrV
    | CurrentModeV
    | MemberV
    | ModeEnumV
    | AlgorithmV
    | AlgorithmEnumV
    | LayoutV
    | ConstVecV
    | RankCountsV
    | RuntimeV
    | ConfigV
    | BufferV
    | TupleV
    | DictV
    | ObjectV
    | SelfV
    | SuperV
    | ModuleV
    | ClassRefV
    | BoundMethodV
    | FunctionRefV
    | UnknownV
    | UnboundV
    | ChoiceV
)
