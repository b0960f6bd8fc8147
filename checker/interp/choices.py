"""Values that differ by path: joined on a condition, mapped, and taken apart again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from idxcheck.interp.values import BoolV, ChoiceV, IntV, NoneV, UnboundV, UnknownV, Value
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import FALSE, TRUE, Formula, Term, conj, disj, ite, neg

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


MAX_ALTERNATIVES = 24


def merge(cond: Formula, a: Value, b: Value) -> Value:
    """The value that is `a` where `cond` holds and `b` elsewhere."""
    if a == b:
        return a
    if cond == TRUE:
        return a
    if cond == FALSE:
        return b
    if isinstance(a, IntV) and isinstance(b, IntV):
        return IntV(ite(cond, a.term, b.term))
    if isinstance(a, BoolV) and isinstance(b, BoolV):
        return BoolV(disj(conj(cond, a.formula), conj(neg(cond), b.formula)))
    alts: list[tuple[Formula, Value]] = []
    for guard, value in ((cond, a), (neg(cond), b)):
        if isinstance(value, ChoiceV):
            alts.extend((conj(guard, c), v) for c, v in value.alts)
        else:
            alts.append((guard, value))
    if len(alts) > MAX_ALTERNATIVES:
        return UnknownV("too many alternative values on different paths")
    return ChoiceV(tuple(alts))


def merge_alternatives(alts: list[tuple[Formula, Value]]) -> Value:
    if not alts:
        return NoneV()
    result = alts[-1][1]
    for cond, value in reversed(alts[:-1]):
        result = merge(cond, value, result)
    return result


def map_choice(choice: ChoiceV, fn: Callable[[Value], Value]) -> Value:
    mapped = [(c, fn(v)) for c, v in choice.alts]
    if all(isinstance(v, IntV) for _, v in mapped):
        result: Term | None = None
        for cond, value in reversed(mapped):
            assert isinstance(value, IntV)
            result = value.term if result is None else ite(cond, value.term, result)
        assert result is not None
        return IntV(result)
    first = mapped[0][1]
    if all(v == first for _, v in mapped):
        return first
    return ChoiceV(tuple(mapped))


SELF_PREFIX = "self."


def self_part(env: dict[str, Value]) -> dict[str, Value]:
    return {k: v for k, v in env.items() if k.startswith(SELF_PREFIX)}


def merged_self_part(
    exits: list[tuple[Formula, dict[str, Value]]], before: dict[str, Value]
) -> dict[str, Value]:
    """The `self` attributes after a call: each exit's, joined on the exit's condition."""
    keys = {k for _, part in exits for k in part}
    merged: dict[str, Value] = {}
    for key in keys:
        alts: list[tuple[Formula, Value]] = []
        for pc, part in exits:
            value = part.get(key, before.get(key))
            alts.append((pc, value if value is not None else UnboundV()))
        merged[key] = merge_alternatives(alts)
    return merged


def iter_choice(value: Value, pc: Formula) -> Iterator[tuple[Formula, Value]]:
    """The alternatives of `value` with the path condition under which each holds. A path on
    which the value was never assigned raises before it gets here: it has no alternative."""
    if isinstance(value, ChoiceV):
        for cond, alt in value.alts:
            yield from iter_choice(alt, conj(pc, cond))
    elif not isinstance(value, UnboundV):
        yield pc, value
