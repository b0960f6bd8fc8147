"""The kinds of things a scan speaks of, as string enums: a value's role, how a binding was
made, a finding's severity, the phase a backend entry point runs in. Each compares equal to its
string and prints as it (reports and JSON carry the strings)."""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10

    class StrEnum(str, enum.Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)


class Role(StrEnum):
    """What a bound value is to the attention kernel."""

    QO = "qo_indptr"  # a query index pointer (`qo_indptr`, `cu_seqlens_q`, `query_start_loc`)
    GRID = "grid"  # a grid-size scalar (`max_extend_len`, `max_seqlen_q`)
    BUFFER = "buffer"  # a slice of a preallocated buffer (not named by a role)


class BindingKind(StrEnum):
    """How a value got its name."""

    ATTRIBUTE = "attribute"  # `self.x = ...`, `meta.x = ...`
    KEYWORD = "keyword"  # `f(x=...)`, a dataclass field by keyword
    POSITIONAL = "positional"  # a dataclass field by position (the field order of its class)
    DICTKEY = "dictkey"  # `{"x": ...}`, `d["x"] = ...`
    SLICE = "slice"  # `x[a:b] = ...`
    COPY = "copy"  # `x.copy_(...)`
    ACCESS = "access"  # a slice of a preallocated buffer, read or written
    # An index pointer handed by position to a function whose parameters are not known: it
    # pairs with the grid scalars of the call, but is no obligation of its own.
    ARGUMENT = "argument"
    # A value handed to a role-named parameter (of a helper of the class, a function or
    # kernel of the tree, a library entry of the profile): it has the parameter's role.
    PARAMETER = "parameter"
    # A buffer preallocated for the largest batch handed to a writer that a tensor allocated
    # per batch is handed to as well: it must hold as many entries.
    HANDOFF = "handoff"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Phase(StrEnum):
    """When a backend entry point builds metadata under CUDA graphs."""

    CAPTURE = "capture"
    REPLAY = "replay"
    EAGER = "eager"


# The key prefix of the speculative algorithm's conditions (`algo:DSPARK`: the server runs
# DSpark), and the key of the condition that a draft worker runs the backend: one server runs
# one algorithm, and a backend and the graph runners that replay it belong to one worker, so
# both mean the same in a runner and in a backend (`idxcheck.facts.algorithms`).
ALGORITHM_ATOM = "algo:"
WORKER_ATOM = "worker:draft"
WORKER_TEXT = "a draft worker runs the backend"
