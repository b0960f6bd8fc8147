"""Terms and formulas as text a person reads, with the profile's short symbol names."""

from __future__ import annotations

from collections.abc import Mapping

from idxcheck.sym.terms import (
    PADDED_PREFIX,
    And,
    Atom,
    BinOp,
    BoolConst,
    Cmp,
    Const,
    Formula,
    Ite,
    ModeIs,
    Not,
    Or,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    Tagged,
    Term,
    Unknown,
    strip,
)

_PRECEDENCE = {"max": 9, "min": 9, "*": 5, "//": 5, "%": 5, "+": 4, "-": 4}


def render_term(term: Term, names: Mapping[str, str] | None = None, *, _parent: int = 0) -> str:
    names = names or {}
    if isinstance(term, Tagged):
        return render_term(term.inner, names, _parent=_parent)
    if isinstance(term, Const):
        return str(term.value)
    if isinstance(term, Sym):
        if term.name.startswith(PADDED_PREFIX):
            return "<a capture size>"
        return names.get(term.name, term.name)
    if isinstance(term, RuntimeWidth):
        return "runtime width"
    if isinstance(term, RuntimeInt):
        return f"<runtime {term.source}>"
    if isinstance(term, Unknown):
        return f"<unknown: {term.reason}>"
    if isinstance(term, BinOp):
        if term.op in ("max", "min"):
            return f"{term.op}({render_term(term.left, names)}, {render_term(term.right, names)})"
        prec = _PRECEDENCE[term.op]
        left = render_term(term.left, names, _parent=prec)
        right = render_term(term.right, names, _parent=prec + 1)
        text = f"{left} {term.op} {right}"
        return f"({text})" if prec < _parent else text
    if isinstance(term, Ite):
        then = strip(term.then)
        if isinstance(then, Sym) and then.name.startswith(PADDED_PREFIX):
            # A count padded to a capture size (`Profile.padding_methods`).
            return f"padded({render_term(term.other, names)})"
        text = (
            f"{render_term(term.then, names, _parent=1)} if {render_formula(term.cond, names, 200)} "
            f"else {render_term(term.other, names, _parent=1)}"
        )
        return f"({text})" if _parent > 0 else text
    raise TypeError(f"not a term: {term!r}")


MAX_RENDER = 400


def render_formula(
    formula: Formula, names: Mapping[str, str] | None = None, limit: int = MAX_RENDER
) -> str:
    """The formula as text, cut at about `limit` characters (path conditions can be large)."""
    text = _render_formula(formula, names or {}, [limit * 4])
    return text if len(text) <= limit else text[: limit - 5] + " ..."


def _render_formula(formula: Formula, names: Mapping[str, str], budget: list[int]) -> str:
    if budget[0] <= 0:
        return "..."
    text = _render_formula_node(formula, names, budget)
    budget[0] -= len(text)
    return text


def _render_formula_node(formula: Formula, names: Mapping[str, str], budget: list[int]) -> str:
    if isinstance(formula, BoolConst):
        return "True" if formula.value else "False"
    if isinstance(formula, Cmp):
        return f"{render_term(formula.left, names, _parent=3)} {formula.op} {render_term(formula.right, names, _parent=3)}"
    if isinstance(formula, And):
        return " and ".join(_wrap(a, names, budget) for a in formula.args)
    if isinstance(formula, Or):
        return " or ".join(_wrap(a, names, budget) for a in formula.args)
    if isinstance(formula, Not):
        return f"not {_wrap(formula.arg, names, budget)}"
    if isinstance(formula, ModeIs):
        members = sorted(formula.members)
        return f"mode is {members[0]}" if len(members) == 1 else f"mode in ({', '.join(members)})"
    if isinstance(formula, Atom):
        return f"`{formula.text}`"
    raise TypeError(f"not a formula: {formula!r}")


def _wrap(formula: Formula, names: Mapping[str, str], budget: list[int]) -> str:
    text = _render_formula(formula, names, budget)
    return f"({text})" if isinstance(formula, (And, Or)) else text
