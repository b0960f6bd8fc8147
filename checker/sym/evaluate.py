"""Concrete evaluation of terms and formulas under an assignment.

The property tests check that this agrees with Python evaluating the original expression, and
the engine uses it to turn a counterexample into the concrete metadata that a replay builds."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from idxcheck.model.spans import Loc
from idxcheck.sym.terms import (
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
    compare,
    fold_binop,
)


class NotConcrete(Exception):
    """The term depends on something the assignment does not fix."""


@dataclass(frozen=True)
class Assignment:
    ints: Mapping[str, int]
    mode: str | None = None
    width: int | None = None
    atoms: Mapping[str, bool] = field(default_factory=dict)


def eval_term(term: Term, env: Assignment) -> int:
    if isinstance(term, Const):
        return term.value
    if isinstance(term, Tagged):
        return eval_term(term.inner, env)
    if isinstance(term, Sym):
        if term.name not in env.ints:
            raise NotConcrete(term.name)
        return env.ints[term.name]
    if isinstance(term, RuntimeWidth):
        if env.width is None:
            raise NotConcrete("runtime width")
        return env.width
    if isinstance(term, BinOp):
        left = eval_term(term.left, env)
        right = eval_term(term.right, env)
        value = fold_binop(term.op, left, right)
        if value is None:
            raise NotConcrete(f"division by zero in {term.op}")
        return value
    if isinstance(term, Ite):
        return eval_term(term.then if eval_formula(term.cond, env) else term.other, env)
    if isinstance(term, (Unknown, RuntimeInt)):
        raise NotConcrete(term.reason if isinstance(term, Unknown) else term.source)
    raise TypeError(f"not a term: {term!r}")


def eval_formula(formula: Formula, env: Assignment) -> bool:
    if isinstance(formula, BoolConst):
        return formula.value
    if isinstance(formula, Cmp):
        return compare(formula.op, eval_term(formula.left, env), eval_term(formula.right, env))
    if isinstance(formula, And):
        return all(eval_formula(a, env) for a in formula.args)
    if isinstance(formula, Or):
        return any(eval_formula(a, env) for a in formula.args)
    if isinstance(formula, Not):
        return not eval_formula(formula.arg, env)
    if isinstance(formula, ModeIs):
        if env.mode is None:
            raise NotConcrete("mode")
        return env.mode in formula.members
    if isinstance(formula, Atom):
        if formula.key not in env.atoms:
            raise NotConcrete(formula.text)
        return env.atoms[formula.key]
    raise TypeError(f"not a formula: {formula!r}")


def selected_tags(term: Term, env: Assignment) -> list[tuple[Loc, str]]:
    """The provenance chain of `term` under `env`, outermost first: each Tagged node met while
    descending through the Ite arms that `env` selects, with its source text. The last one is
    where the value that matters was written."""
    chain: list[tuple[Loc, str]] = []
    node = term
    while True:
        if isinstance(node, Tagged):
            if not chain or chain[-1][0] is not node.loc:
                chain.append((node.loc, node.loc.text))
            node = node.inner
        elif isinstance(node, Ite):
            try:
                node = node.then if eval_formula(node.cond, env) else node.other
            except NotConcrete:
                return chain
        else:
            return chain


_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$")


def primary_tag(chain: list[tuple[Loc, str]]) -> tuple[Loc, str] | None:
    """Where the value that matters was written: the innermost place on the chain that
    computes something (`steps + 1`, a conditional arm, a call), skipping plain aliases
    (`n`, `self.width`); when every place is an alias, the outermost, where it is used."""
    for loc, text in reversed(chain):
        if not _PLAIN_NAME.match(text):
            return loc, text
    return chain[0] if chain else None
