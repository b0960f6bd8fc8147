"""Pulling if-then-else out of terms and formulas: one case per combination of arms, each
with the guard under which it holds (bounded, so that a large term gives up instead)."""

from __future__ import annotations

from idxcheck.sym.terms import (
    TRUE,
    And,
    BinOp,
    Cmp,
    Formula,
    Ite,
    Not,
    Or,
    Tagged,
    Term,
    conj,
    disj,
    neg,
)

MAX_CASES = 64


def lift_term(term: Term, limit: int = MAX_CASES) -> list[tuple[Formula, Term]] | None:
    """Pull if-then-else out of a term: [(guard, ite-free term)], or None when too many."""
    if isinstance(term, Tagged):
        return lift_term(term.inner, limit)
    if isinstance(term, Ite):
        then_cases = lift_term(term.then, limit)
        else_cases = lift_term(term.other, limit)
        if then_cases is None or else_cases is None:
            return None
        cases = [(conj(term.cond, g), t) for g, t in then_cases] + [
            (conj(neg(term.cond), g), t) for g, t in else_cases
        ]
        return cases if len(cases) <= limit else None
    if isinstance(term, BinOp):
        left = lift_term(term.left, limit)
        right = lift_term(term.right, limit)
        if left is None or right is None or len(left) * len(right) > limit:
            return None
        return [(conj(gl, gr), BinOp(term.op, tl, tr)) for gl, tl in left for gr, tr in right]
    return [(TRUE, term)]


def lift_formula(formula: Formula, limit: int = MAX_CASES) -> list[tuple[Formula, Formula]] | None:
    if isinstance(formula, Cmp):
        left = lift_term(formula.left, limit)
        right = lift_term(formula.right, limit)
        if left is None or right is None or len(left) * len(right) > limit:
            return None
        return [(conj(gl, gr), Cmp(formula.op, tl, tr)) for gl, tl in left for gr, tr in right]
    if isinstance(formula, (And, Or)):
        cases: list[tuple[Formula, list[Formula]]] = [(TRUE, [])]
        for arg in formula.args:
            sub = lift_formula(arg, limit)
            if sub is None or len(cases) * len(sub) > limit:
                return None
            cases = [(conj(g, gs), [*parts, f]) for g, parts in cases for gs, f in sub]
        build = conj if isinstance(formula, And) else disj
        return [(g, build(*parts)) for g, parts in cases]
    if isinstance(formula, Not):
        sub = lift_formula(formula.arg, limit)
        return None if sub is None else [(g, neg(f)) for g, f in sub]
    return [(TRUE, formula)]
