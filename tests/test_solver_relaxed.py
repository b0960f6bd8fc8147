"""Each question is asked of z3 first without the nonlinear domain constraints: the answer must be
the one z3 gives for the whole question, on hand-picked cases where each way out is taken and on
random ones."""

from __future__ import annotations

import random

import pytest
import z3

from idxcheck.model.verdicts import Verdict
from idxcheck.solve.solver import Solver, _check, _linear_formula, _Translator
from idxcheck.sym.terms import Atom, Const, Formula, Sym, Term, binop, cmp, conj, disj, ite, neg

X, Y, Z = Sym("x"), Sym("y"), Sym("z")
SQUARE_IS_FOUR = cmp("==", binop("*", X, X), Const(4))
POSITIVE = [cmp(">=", s, Const(0)) for s in (X, Y, Z)]


def whole(domain: list[Formula], rest: list[Formula]) -> z3.CheckSatResult:
    """What z3 says of everything at once, as the solver asked before the relaxation."""
    solver = z3.Solver()
    translator = _Translator()
    for part in [*domain, *rest]:
        solver.add(translator.formula(part))
    return solver.check()


def test_linear_or_not() -> None:
    assert _linear_formula(cmp("<=", binop("*", Const(3), X), binop("+", Y, Const(1))))
    assert _linear_formula(cmp("<", binop("//", X, Const(4)), binop("%", Y, Const(2))))
    assert not _linear_formula(SQUARE_IS_FOUR)
    assert not _linear_formula(cmp("<", binop("//", X, Y), Const(2)))
    assert not _linear_formula(disj(cmp("<", X, Const(1)), cmp(">", binop("%", X, Y), Z)))
    assert not _linear_formula(cmp("<", ite(cmp(">", binop("*", X, Y), Z), X, Y), Const(0)))


def test_relaxed_question_without_a_model_answers_unsat() -> None:
    solver = Solver([SQUARE_IS_FOUR], [])
    rest = [cmp(">", X, Const(5)), cmp("<", X, Const(3))]
    assert solver._relaxed([SQUARE_IS_FOUR], rest) == z3.unsat
    assert solver._decide([SQUARE_IS_FOUR], rest) == z3.unsat


def test_relaxed_model_that_breaks_a_nonlinear_constraint_asks_the_whole() -> None:
    solver = Solver([SQUARE_IS_FOUR], [])
    # x >= 3 has models, none with x * x == 4: the relaxed model cannot be the answer.
    rest = [cmp(">=", X, Const(3))]
    assert solver._relaxed([SQUARE_IS_FOUR], rest) is None
    assert solver._decide([SQUARE_IS_FOUR], rest) == z3.unsat
    # x >= 1 has x = 2 among its models.
    assert solver._decide([SQUARE_IS_FOUR], [cmp(">=", X, Const(1))]) == z3.sat


def test_relaxed_model_that_keeps_the_nonlinear_constraints_answers_sat() -> None:
    domain = [cmp("<=", binop("*", Y, Y), Const(100))]
    solver = Solver(domain, [])
    # Symbols only a nonlinear constraint mentions are completed to 0, which keeps y * y <= 100.
    assert solver._relaxed(domain, [cmp("==", X, Const(7))]) == z3.sat


def test_verdicts_of_check_under_a_nonlinear_domain() -> None:
    solver = Solver([SQUARE_IS_FOUR, *POSITIVE], ["x"])
    assumptions = cmp(">=", X, Const(1))
    assert solver.check(assumptions, cmp("!=", X, Const(2))).verdict == Verdict.PROVED
    refuted = solver.check(assumptions, cmp("==", X, Const(2)))
    assert refuted.verdict == Verdict.REFUTED and refuted.model == {"x": 2}
    unreachable = solver.check(cmp(">=", X, Const(3)), cmp(">=", X, Const(0)))
    assert unreachable.verdict == Verdict.UNREACHABLE


def _term(rng: random.Random, depth: int) -> Term:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([X, Y, Z, Const(rng.randint(-3, 6))])
    op = rng.choice(["+", "-", "*", "//", "%", "max", "min"])
    return binop(op, _term(rng, depth - 1), _term(rng, depth - 1))


def _formula(rng: random.Random, depth: int) -> Formula:
    if depth == 0 or rng.random() < 0.4:
        if rng.random() < 0.15:
            key = f"atom{rng.randint(0, 2)}"
            return Atom(key, key)
        op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
        return cmp(op, _term(rng, 2), _term(rng, 2))
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return neg(_formula(rng, depth - 1))
    parts = [_formula(rng, depth - 1) for _ in range(rng.randint(2, 3))]
    return conj(*parts) if kind == "and" else disj(*parts)


@pytest.mark.parametrize("seed", range(4))
def test_random_questions_get_the_whole_questions_answer(seed: int) -> None:
    """The relaxation changes no answer: where `_decide` answers, it is what z3 says of the whole
    question without a budget; it answers `unknown` only where the whole question, asked with
    the product's parameters and budget, is `unknown` too (those parameters leave out parts of
    z3's nonlinear arithmetic on purpose, see SOLVER_PARAMS, and may differ by z3 build)."""
    rng = random.Random(seed)
    decided = {"sat": 0, "unsat": 0}
    relaxed = unknown = 0
    for _ in range(60):
        domain = [
            *POSITIVE,
            cmp("<=", X, Const(8)),
            *[_formula(rng, 1) for _ in range(rng.randint(1, 2))],
        ]
        rest = [_formula(rng, 2) for _ in range(rng.randint(1, 2))]
        solver = Solver(domain, [], rlimit=5_000_000)
        expected = whole(domain, rest)
        got = solver._decide(domain, rest)
        if got == z3.unknown:
            bounded = _check(solver._new(solver._translator(), [*domain, *rest]))
            assert bounded == z3.unknown, (domain, rest, bounded)
            unknown += 1
            continue
        if expected == z3.unknown:
            continue
        assert got == expected, (domain, rest)
        decided[str(expected)] += 1
        relaxed += solver._relaxed(domain, rest) is not None
    # Both answers, and answers found without the nonlinear constraints, among the cases; the
    # budget rarely runs out on questions this small.
    assert decided["sat"] > 5 and decided["unsat"] > 5 and relaxed > 5, (decided, relaxed)
    assert unknown <= 3, unknown
