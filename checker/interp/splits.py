"""A batch split by each request's query tokens, read where every request carries one width.

vLLM's builders split their batch into decodes and prefills (`split_decodes_and_prefills`): in
general the counts are the runtime's (`Profile.runtime_counts`). In a phase whose requests all
carry the runtime width `w` (a verify step, a capture's dummy batch, a draft step), the counts
are known (`Profile.uniform_splits`): every one of the `bs` requests is a decode where `w` is at
most the threshold passed, none is otherwise. So the decode part's layout
(`query_start_loc[: num_decodes + 1]`) is checked against the phase's requests, and the branch
of the part that is empty there is not taken."""

from __future__ import annotations

from collections.abc import Callable

from idxcheck.interp.state import RUNTIME_ATOM
from idxcheck.interp.values import BoolV, ChoiceV, IntV, TupleV, Value
from idxcheck.model.kinds import ALGORITHM_ATOM, WORKER_ATOM
from idxcheck.profiles.schema import UniformSplit
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    Const,
    Formula,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    Term,
    Unknown,
    binop,
    cmp,
    conj,
    formula_atom_keys,
    neg,
    term_leaves,
)


def split_threshold(
    split: UniformSplit,
    args: list[Value],
    kwargs: dict[str, Value],
    to_term: Callable[[Value], Term],
) -> Term | None:
    """The threshold a call passes, or None where the split is not known: a flag passed with
    another value than its default (or one that is not a constant), a threshold that is not
    the configuration's."""
    for flag, position, default in split.flags:
        given = _argument(flag, position, args, kwargs)
        if given is None:
            continue
        if not (isinstance(given, BoolV) and given.formula == (TRUE if default else FALSE)):
            return None
    given = _argument(split.threshold, split.position, args, kwargs)
    if given is None:
        return Const(split.default)
    term = to_term(given)
    # A threshold of the configuration: one read from the runtime (an attribute the class
    # writes per forward) or not modelled leaves the split to the runtime.
    if any(isinstance(leaf, (Unknown, RuntimeInt, RuntimeWidth)) for leaf in term_leaves(term)):
        return None
    # So is one chosen by a condition idxcheck cannot read but as the text of one function
    # (a flag handed down from a call it does not model): nothing ties that condition to the
    # same value tested elsewhere (FlashInfer 0.13.0 takes speculative requests as decodes
    # exactly where it decodes with TRT-LLM, both from one call), and the split would be read
    # on paths that never run.
    if not all(_shared(key) for key in formula_atom_keys(term)):
        return None
    return term


# The keys of conditions that are one condition wherever they are written: on the runtime's or
# the configuration's objects, whether one of them is None, the server's algorithm, the worker.
_SHARED_ATOMS = (RUNTIME_ATOM, "none:", ALGORITHM_ATOM, WORKER_ATOM)


def _shared(key: str) -> bool:
    """Whether an opaque condition is one condition wherever it is written: a shared key, or
    one on the class's own attributes (`Class:self.x ...`), which every method of the class
    reads alike; not one local to the function that wrote it (`Class.method:...`)."""
    owner, _, text = key.partition(":")
    return key.startswith(_SHARED_ATOMS) or ("." not in owner and text.startswith("self."))


def uniform_split(split: UniformSplit, runtime: TupleV, threshold: Term, uniform: Formula) -> Value:
    """The counts of a split: known in a phase of one width per request (`uniform`), the
    runtime's elsewhere."""
    below = cmp("<=", RuntimeWidth(), threshold)
    # The runtime's alternative first: an integer of the choice is read as nested
    # if-then-else from the last alternative up, so that in a mode of one width the runtime's
    # drops out and the two known cases are left.
    return ChoiceV(
        (
            (neg(uniform), runtime),
            (conj(uniform, below), _counts(split.below)),
            (conj(uniform, neg(below)), _counts(split.above)),
        )
    )


def _counts(kinds: tuple[str, ...]) -> TupleV:
    return TupleV(tuple(IntV(_count(kind)) for kind in kinds))


def _count(kind: str) -> Term:
    if kind == "requests":
        return Sym("bs")
    if kind == "tokens":
        return binop("*", Sym("bs"), RuntimeWidth())
    return Const(0)


def _argument(
    name: str, position: int, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    if name in kwargs:
        return kwargs[name]
    return args[position] if len(args) > position else None
