"""The exact number of entries of an `arange`, as a term."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym import poly
from idxcheck.sym.cases import lift_term
from idxcheck.sym.terms import (
    FALSE,
    BinOp,
    RuntimeInt,
    Term,
    Unknown,
    binop,
    conj,
    const_value,
    term_leaves,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


# ---------------------------------------------------------------------------------------------
# Helpers


def entries_of(start: Term, end: Term, step: Term) -> Term | None:
    """The exact number of entries of `arange(start, end, step)` (see `_entries_of`). When the
    step and end are if-then-else terms (a width chosen per path), each case is solved alone
    (with the end of the same case, where both have the same cases) and the cases must
    agree."""
    direct = _entries_of(start, end, step)
    if direct is not None:
        return direct
    step_cases = lift_term(step, 16)
    end_cases = lift_term(end, 16)
    if step_cases is None or end_cases is None or (len(step_cases) == 1 and len(end_cases) == 1):
        return None
    found: Term | None = None
    pairs: list[tuple[Term, Term]]
    if [g for g, _ in step_cases] == [g for g, _ in end_cases]:
        # One if-then-else skeleton (`(1 + bs) * n` and `n` of a width `n` chosen per path,
        # the product taken on each path): the cases are its leaves, and two different
        # leaves never hold together, so each step goes with the end of its own leaf.
        pairs = [(s, e) for (_, s), (_, e) in zip(step_cases, end_cases, strict=True)]
    else:
        pairs = [
            (step_case, end_case)
            for step_guard, step_case in step_cases
            for end_guard, end_case in end_cases
            if conj(step_guard, end_guard) != FALSE
        ]
    for step_case, end_case in pairs:
        entries = _entries_of(start, end_case, step_case)
        if entries is None or any(
            isinstance(leaf, Unknown) for leaf in term_leaves(BinOp("+", step_case, end_case))
        ):
            if any(
                isinstance(leaf, (Unknown, RuntimeInt))
                for leaf in term_leaves(BinOp("+", step_case, end_case))
            ):
                # A case that is not modelled is left to the rule (unsupported): what an
                # unknown gives here (`n * x` of an unknown `x` is that unknown) is no count.
                continue
            return None
        if found is None:
            found = entries
        elif poly.to_poly(found) != poly.to_poly(entries):
            return None
    return found


def _entries_of(start: Term, end: Term, step: Term) -> Term | None:
    """The exact number of entries of `arange(start, end, step)`, when it has a closed form:
    (end - start) = q * step + r with a constant remainder r, and 0 < r <= step provable
    (r == 1, or a constant step >= r) gives q + 1; r == 0 gives q. Subterms that are not
    polynomials are treated as opaque (a stride `n if c else m` still gives `bs * n + 1`
    over `n` = bs + 1 entries); strides are at least 1."""
    step_plain = poly.to_poly(step)
    opaque = poly.Opaque((step,) if step_plain is None or len(step_plain) > 1 else ())
    span_poly = poly.to_poly(binop("-", end, start), opaque)
    step_poly = poly.to_poly(step, opaque)
    if span_poly is None or step_poly is None or not step_poly:
        return None
    qr = poly.divmod_monomial(span_poly, step_poly)
    if qr is None:
        return None
    quotient, remainder = qr
    if not poly.is_constant(remainder):
        return None
    r = poly.constant_of(remainder)
    if r == 0:
        return poly.to_term(quotient, opaque)
    step_value = const_value(step)
    if r == 1 or (step_value is not None and 0 < r <= step_value):
        return poly.to_term(poly.add(quotient, {(): 1}), opaque)
    if r < 0 and step_value is not None and -step_value < r:
        return poly.to_term(quotient, opaque)
    return None
