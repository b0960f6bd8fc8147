"""Factors two products share, taken away from both: `max_bs * k >= bs * topk * k` is
`max_bs >= bs * topk` where `k` (a dimension both allocations have) is at least one."""

from __future__ import annotations

from idxcheck.sym.terms import BinOp, Const, Term, Unknown, binop, term_leaves, untag


def factors(term: Term) -> list[Term]:
    """The factors of a product, provenance left out (a term that is no product is one)."""
    term = untag(term)
    if isinstance(term, BinOp) and term.op == "*":
        return [*factors(term.left), *factors(term.right)]
    return [term]


def product(parts: list[Term]) -> Term:
    total: Term = Const(1)
    for part in parts:
        total = binop("*", total, part)
    return total


def without_common_factors(left: Term, right: Term) -> tuple[Term, Term]:
    """`left` and `right` with the factors they share taken away, for comparing sizes (each
    factor a positive count). A factor that is not modelled is never taken away: two
    unknowns of the same description may be two values."""
    rest = factors(right)
    kept: list[Term] = []
    for part in factors(left):
        shared = _cancellable(part) and part in rest
        if shared:
            rest.remove(part)
        else:
            kept.append(part)
    return product(kept), product(rest)


def _cancellable(term: Term) -> bool:
    if isinstance(term, Const):
        return term.value > 0
    return not any(isinstance(leaf, Unknown) for leaf in term_leaves(term))
