"""Exact polynomial normal form of integer terms.

Used where the extractor must know a shape exactly rather than ask the solver: the number of
entries of `arange(0, bs * n + 1, n)`, or that `num_tokens // bs` is the runtime width when
`num_tokens == bs * W`. A term that is not a polynomial (Ite, max, unknowns) has no normal
form, and callers fall back to keeping the term as it is."""

from __future__ import annotations

from collections.abc import Mapping

from idxcheck.sym.terms import BinOp, Const, RuntimeWidth, Sym, Tagged, Term, binop, untag

Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers
Poly = dict[Monomial, int]

WIDTH = "@W"  # the monomial name of RuntimeWidth


class Opaque:
    """Names for subterms that are not polynomials (`x if c else y`), so that shapes such as
    `bs * n + 1` over step `n` have a normal form whatever `n` is."""

    def __init__(self, atoms: tuple[Term, ...] = ()) -> None:
        self._names: dict[Term, str] = {}
        self._terms: dict[str, Term] = {}
        # Subterms kept whole even when they are polynomials (a stride `steps + 1`, so that
        # `bs * (steps + 1) + 1` divides by it).
        self.forced = frozenset(untag(a) for a in atoms)

    def name_for(self, term: Term) -> str:
        key = untag(term)
        name = self._names.get(key)
        if name is None:
            name = f"#{len(self._names)}"
            self._names[key] = name
            self._terms[name] = term
        return name

    def term_for(self, name: str) -> Term | None:
        return self._terms.get(name)


def to_poly(term: Term, opaque: Opaque | None = None) -> Poly | None:
    if isinstance(term, Tagged):
        return to_poly(term.inner, opaque)
    if opaque is not None and opaque.forced and untag(term) in opaque.forced:
        return {(opaque.name_for(term),): 1}
    if isinstance(term, Const):
        return {(): term.value} if term.value else {}
    if isinstance(term, Sym):
        return {(term.name,): 1}
    if isinstance(term, RuntimeWidth):
        return {(WIDTH,): 1}
    if isinstance(term, BinOp) and term.op in ("+", "-", "*", "//"):
        left = to_poly(term.left, opaque)
        right = to_poly(term.right, opaque)
        if left is None or right is None:
            return {(opaque.name_for(term),): 1} if opaque is not None else None
        if term.op == "+":
            return add(left, right)
        if term.op == "-":
            return add(left, scale(right, -1))
        if term.op == "*":
            return mul(left, right)
        if term.op == "//":
            exact = exact_div(left, right)
            if exact is None and opaque is not None:
                return {(opaque.name_for(term),): 1}
            return exact
    if opaque is not None:
        return {(opaque.name_for(term),): 1}
    return None


def add(a: Mapping[Monomial, int], b: Mapping[Monomial, int]) -> Poly:
    out = dict(a)
    for mono, coef in b.items():
        out[mono] = out.get(mono, 0) + coef
        if out[mono] == 0:
            del out[mono]
    return out


def scale(a: Mapping[Monomial, int], k: int) -> Poly:
    return {m: c * k for m, c in a.items() if c * k}


def mul(a: Mapping[Monomial, int], b: Mapping[Monomial, int]) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            mono = tuple(sorted(ma + mb))
            out[mono] = out.get(mono, 0) + ca * cb
            if out[mono] == 0:
                del out[mono]
    return out


def _divide_monomial(mono: Monomial, by: Monomial) -> Monomial | None:
    rest = list(mono)
    for name in by:
        if name not in rest:
            return None
        rest.remove(name)
    return tuple(rest)


def divmod_monomial(
    p: Mapping[Monomial, int], divisor: Mapping[Monomial, int]
) -> tuple[Poly, Poly] | None:
    """(quotient, remainder) of `p` by a single-monomial `divisor`: monomials of `p` that the
    divisor divides exactly go to the quotient, the rest to the remainder."""
    if len(divisor) != 1:
        return None
    ((dmono, dcoef),) = divisor.items()
    quotient: Poly = {}
    remainder: Poly = {}
    for mono, coef in p.items():
        rest = _divide_monomial(mono, dmono)
        if rest is not None and coef % dcoef == 0:
            quotient[rest] = quotient.get(rest, 0) + coef // dcoef
        else:
            remainder[mono] = remainder.get(mono, 0) + coef
    return quotient, remainder


def exact_div(p: Mapping[Monomial, int], divisor: Mapping[Monomial, int]) -> Poly | None:
    if not divisor:
        return None
    if len(divisor) == 1:
        qr = divmod_monomial(p, divisor)
        if qr is None or qr[1]:
            return None
        return qr[0]
    # A multi-term divisor: accept p == k * divisor for a monomial k (enough for
    # `(bs + 1) * n // (bs + 1)`-like shapes).
    lead = max(divisor)
    for mono, coef in p.items():
        rest = _divide_monomial(mono, lead)
        if rest is None or coef % divisor[lead]:
            continue
        factor: Poly = {rest: coef // divisor[lead]}
        if mul(factor, divisor) == dict(p):
            return factor
    return None


def to_term(p: Mapping[Monomial, int], opaque: Opaque | None = None) -> Term:
    """A canonical term for a polynomial (monomials in sorted order)."""
    result: Term | None = None
    for mono in sorted(p):
        coef = p[mono]
        piece: Term = Const(abs(coef))
        for name in mono:
            found = opaque.term_for(name) if opaque is not None else None
            factor: Term = (
                found if found is not None else (RuntimeWidth() if name == WIDTH else Sym(name))
            )
            piece = factor if piece == Const(1) else binop("*", piece, factor)
        if result is None:
            result = piece if coef > 0 else binop("-", Const(0), piece)
        else:
            result = binop("+" if coef > 0 else "-", result, piece)
    return result if result is not None else Const(0)


def is_constant(p: Mapping[Monomial, int]) -> bool:
    return all(m == () for m in p)


def constant_of(p: Mapping[Monomial, int]) -> int:
    return p.get((), 0)


def symbols(p: Mapping[Monomial, int]) -> set[str]:
    return {name for mono in p for name in mono}
