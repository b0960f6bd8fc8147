"""What the interpreter records and runs with: bindings and buffer accesses, the context of a scan, the state of a path and the frame of a call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from idxcheck.interp.values import Value
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.model.spans import Loc
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import FunctionSource
from idxcheck.source.lazy_import import lazy_module
from idxcheck.source.modules import FunctionIndex
from idxcheck.sym.terms import Formula, Term

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


# The key prefix of opaque conditions on runtime objects (`spec_info.x`, `forward_batch.y is
# None`): they mean the same wherever they are written, in a runner or a backend.
RUNTIME_ATOM = "rt:"


class ModeOracle(Protocol):
    @property
    def members(self) -> tuple[str, ...]: ...

    @property
    def enum_name(self) -> str: ...

    def call(
        self, name: str, args: list[Formula], kwargs: dict[str, Formula]
    ) -> Formula | None: ...


class AlgorithmOracle(Protocol):
    """The speculative-algorithm enum of the scanned tree (`facts.algorithms.AlgorithmModel`)."""

    @property
    def enum_name(self) -> str: ...

    @property
    def members(self) -> tuple[str, ...]: ...

    @property
    def none_member(self) -> str: ...

    def predicate(
        self, name: str, args: list[Formula], kwargs: dict[str, Formula]
    ) -> Formula | None: ...

    def over_atoms(self, formula: Formula) -> Formula: ...

    def method(self, name: str) -> FunctionSource | None: ...


@dataclass(frozen=True)
class Binding:
    """A value bound to a name that has an index-pointer or grid-scalar role."""

    role: Role
    name: str
    value: Value
    pc: Formula
    loc: Loc
    function: str
    chain: tuple[str, ...]
    kind: BindingKind
    target_lower: Term | None = None
    target_upper: Term | None = None
    # Bindings made together (the keywords of one call, the fields of one metadata object,
    # the keys of one dict): a grid scalar is paired with the index pointer of its group.
    group: Loc | None = None
    # For slice and copy writes: how many entries the written value has.
    source_length: Term | None = None
    # For positional construction: the dataclass whose field order gave the value its name,
    # and the file that declares it (an edit there can rename what the call binds).
    declared_by: tuple[str, str] | None = None
    # The lines of the function it is bound in, and the expression that holds the forward
    # mode there (`forward_mode`, `forward_batch.forward_mode`; "" where none does): what a
    # fix may write in that function.
    scope: tuple[int, int] = (0, 0)
    mode_expr: str = ""
    # The expression that holds the runtime object publishing the width there (`spec_info`,
    # `forward_batch.spec_info`; "" where none is in scope): what a fix may read it from.
    width_holder: str = ""
    # For attribute writes: the object written on, as written (`metadata`, `self`): two
    # objects' fields of one name are two places, not one refilled twice.
    owner: str | None = None
    # Where the value got its role when that is not the name it is bound to: the parameter,
    # field or keyword of a call it reaches (`cu_seqlens_q=` of `flash_attn_varlen_func`).
    destination: str | None = None
    # Other places a finding of the binding shows, each with its role and what it is (the two
    # allocations a buffer handed to a writer is compared by).
    related: tuple[tuple[str, str, Loc], ...] = ()


@dataclass(frozen=True)
class BufferAccess:
    """A slice of a preallocated buffer (`buf[: bs * topk + 1]`), read or written: it must stay
    within the buffer's allocation."""

    buffer: str
    capacity: Term
    end: Term  # offset + upper bound of the slice
    alloc: Loc | None
    loc: Loc
    pc: Formula
    function: str
    chain: tuple[str, ...]


@dataclass(frozen=True)
class Handoff:
    """A tensor handed to a writer: a Triton kernel's launch (`kernel[]`), a function of the
    scanned tree (`fill_rows`), or the receiver of a `.copy_` of some value
    (`.copy_(spec_info.rows)`), at one of its parameters (`#3`, `out=`, `receiver`). A buffer
    preallocated for the largest batch and a tensor allocated per batch that reach the same
    writer at the same parameter are compared by what they hold."""

    writer: str
    slot: str
    value: Value
    text: str  # the argument as written
    loc: Loc
    pc: Formula
    function: str
    chain: tuple[str, ...]


@dataclass
class ScanContext:
    """What the interpreter needs to know beyond the class it analyses."""

    profile: Profile
    modes: ModeOracle
    dataclass_fields: Callable[[str], tuple[str, ...] | None]
    phase_widths: dict[str, Term]
    module_functions: frozenset[str] = frozenset()
    # Definitions of the runtime's width functions found in the scanned tree.
    width_defs: Mapping[str, FunctionSource] = field(default_factory=dict)
    # A class of the scanned tree by name (same file first), to follow base classes.
    class_lookup: Callable[[str, object], object] | None = None
    # The file that declares a dataclass (by name, as `dataclass_fields` finds it).
    dataclass_file: Callable[[str], str | None] = lambda _name: None
    # The module-level functions of the scanned tree, followed where called (None: not
    # followed, as in the tree facts' readings).
    functions: FunctionIndex | None = None
    # The parameters (positional, keyword-only) of a function of the scanned tree by name,
    # when one of them has a role.
    signatures: Callable[[str], tuple[tuple[str, ...], tuple[str, ...]] | None] = lambda _name: None
    # The speculative-algorithm enum of the scanned tree (None: the algorithm is not modelled).
    algorithms: AlgorithmOracle | None = None


@dataclass
class State:
    env: dict[str, Value]
    pc: Formula
    alive: bool = True

    def fork(self, pc: Formula) -> State:
        return State(dict(self.env), pc, self.alive)


@dataclass
class Frame:
    fn: FunctionSource
    chain: tuple[str, ...]
    depth: int
    returns: list[tuple[Formula, Value]] = field(default_factory=list)
    exits: list[tuple[Formula, dict[str, Value]]] = field(default_factory=list)


class EvaluationLimit(Exception):
    """A method is too large or too deep to interpret; reported as unsupported."""
