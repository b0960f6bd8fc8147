"""What a uniform index vector describes: how many segments it has per request, and how long
each segment is. Shared by the rules and by the pairing of grid scalars with index pointers."""

from __future__ import annotations

from dataclasses import dataclass

from idxcheck.interp.values import BufferV, LayoutV
from idxcheck.sym import poly
from idxcheck.sym.cases import lift_term
from idxcheck.sym.render import render_term
from idxcheck.sym.terms import (
    FALSE,
    Const,
    Formula,
    RuntimeInt,
    Term,
    Unknown,
    binop,
    conj,
    const_value,
    disj,
    term_leaves,
)

BATCH_SYMBOLS = ("bs", "max_bs")
# The symbols a buffer preallocated for the largest captured batch is sized from.
SIZE_SYMBOLS = frozenset({"max_bs", "max_num_tokens"})


@dataclass(frozen=True)
class Segments:
    """`per_request` segments of `length` tokens each, for every request; or `problem`."""

    per_request: Term | None
    length: Term | None
    problem: str = ""
    # The length is modelled but is not a whole number of segments per request: a shape
    # error (reported by the length rule), not something the extractor failed to model.
    misshapen: bool = False
    # Where the layout has no segment at all (a part of a split batch that is empty in some
    # configurations): nothing to check there.
    empty_when: Formula = FALSE


def segments(value: LayoutV) -> Segments:
    if value.entries is None:
        return Segments(None, None, f"the length of `{value.text}` has no closed form")
    found = _segments(value.start, value.stride, value.entries, value.text)
    if found.per_request is not None:
        return found
    return _segments_by_case(value) or found


def _segments(start_term: Term, stride_term: Term, entries: Term, text: str) -> Segments:
    # An index pointer starts at 0 and has one more entry than segments; the offset form
    # (`arange(n, n + bs * n, n)`, the pointer without its leading 0) starts at its stride and
    # has one entry per segment.
    opaque = poly.Opaque((stride_term,))
    start = poly.to_poly(start_term, opaque)
    stride = poly.to_poly(stride_term, opaque)
    if start == {}:
        count = poly.to_poly(binop("-", entries, Const(1)), opaque)
    elif start is not None and start == stride:
        count = poly.to_poly(entries, opaque)
    else:
        return Segments(None, None, f"`{text}` does not start at 0 or at its stride")
    if count is None:
        return Segments(None, None, f"the length of `{text}` has no closed form")
    for batch in BATCH_SYMBOLS:
        factor = poly.exact_div(count, {(batch,): 1})
        if factor is not None and batch not in poly.symbols(factor):
            return Segments(poly.to_term(factor, opaque), stride_term)
    modelled = poly.symbols(count) <= set(BATCH_SYMBOLS) | {
        name for name in poly.symbols(count) if not name.startswith("#")
    }
    return Segments(
        None,
        None,
        f"`{text}` has {render_term(poly.to_term(count, opaque))} segments, not a whole number per request",
        misshapen=modelled
        and not any(
            isinstance(leaf, (Unknown, RuntimeInt))
            for leaf in term_leaves(poly.to_term(count, opaque))
        ),
    )


def _segments_by_case(value: LayoutV) -> Segments | None:
    """A layout whose start and length are chosen per case (the decode part of a batch split by
    a threshold: every request where the width is at most it, none otherwise): the segments
    per request of every case that has any, where they agree, and the condition under which
    there are none."""
    assert value.entries is not None
    starts = lift_term(value.start, 8)
    lengths = lift_term(value.entries, 8)
    if starts is None or lengths is None or len(starts) * len(lengths) < 2:
        return None
    found: Term | None = None
    empty: list[Formula] = []
    for start_guard, start in starts:
        for length_guard, length in lengths:
            guard = conj(start_guard, length_guard)
            if guard == FALSE:
                continue
            shape = _segments(start, value.stride, length, value.text)
            if shape.per_request is None:
                return None
            if const_value(shape.per_request) == 0:
                empty.append(guard)
            elif found is None:
                found = shape.per_request
            elif shape.per_request != found:
                return None
    if found is None:
        return None
    return Segments(found, value.stride, empty_when=disj(*empty))


@dataclass(frozen=True)
class Pairing:
    """The index pointer a grid scalar is built with (same metadata object, same call, same
    dict): the scalar must cover each of its segments, `segment` tokens long."""

    segment: Term
    per_request: bool
    text: str
    none: bool = False  # `qo_indptr=None`: no index pointer was handed over


def buffer_segments_per_request(value: BufferV) -> Term | None:
    """Segments per request of an index-pointer buffer of known length (`buf[: bs + 1]`)."""
    if value.length is None:
        return None
    count = poly.to_poly(binop("-", value.length, Const(1)))
    if count is None:
        return None
    for batch in BATCH_SYMBOLS:
        factor = poly.exact_div(count, {(batch,): 1})
        if factor is not None and batch not in poly.symbols(factor):
            return poly.to_term(factor)
    return None
