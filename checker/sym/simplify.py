"""Exact simplification of terms and formulas for the solver (divisions that divide exactly)."""

from __future__ import annotations

from idxcheck.sym import poly
from idxcheck.sym.terms import (
    And,
    BinOp,
    Cmp,
    Formula,
    Ite,
    Not,
    Or,
    Tagged,
    Term,
    binop,
    cmp,
    conj,
    disj,
    ite,
    neg,
)


def simplify(term: Term) -> Term:
    """Exact simplification for the solver: divisions that divide exactly become their
    quotient (`(bs * W) // bs` is `W`), so the solver needs no non-linear division there."""
    if isinstance(term, Tagged):
        return simplify(term.inner)
    if isinstance(term, BinOp):
        left, right = simplify(term.left), simplify(term.right)
        if term.op == "//":
            lp, rp = poly.to_poly(left), poly.to_poly(right)
            if lp is not None and rp is not None:
                quotient = poly.exact_div(lp, rp)
                if quotient is not None:
                    return poly.to_term(quotient)
        return binop(term.op, left, right)
    if isinstance(term, Ite):
        return ite(simplify_formula(term.cond), simplify(term.then), simplify(term.other))
    return term


def simplify_formula(formula: Formula) -> Formula:
    if isinstance(formula, Cmp):
        return cmp(formula.op, simplify(formula.left), simplify(formula.right))
    if isinstance(formula, And):
        return conj(*(simplify_formula(a) for a in formula.args))
    if isinstance(formula, Or):
        return disj(*(simplify_formula(a) for a in formula.args))
    if isinstance(formula, Not):
        return neg(simplify_formula(formula.arg))
    return formula
