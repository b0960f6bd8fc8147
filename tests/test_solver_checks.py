"""The solver builds z3 terms without z3's Python-side argument checks (`Z3_DEBUG` off): a term
of the wrong sort is still refused, by z3's C API, with an error instead of a wrong answer."""

from __future__ import annotations

import pytest

from idxcheck.solve.solver import Solver
from idxcheck.sym.terms import Cmp, Const, Sym
from idxcheck.verdicts import Verdict


def test_a_term_of_the_wrong_sort_is_refused_with_the_checks_off() -> None:
    import z3

    Solver([], [])  # the solver module is loaded, with the checks off
    assert not z3.z3.z3_debug()
    with pytest.raises(z3.Z3Exception, match="Sort mismatch"):
        z3.And(z3.Int("x"), z3.Bool("b"))


def test_answers_are_unchanged_with_the_checks_off() -> None:
    bs = Sym("bs")
    solver = Solver([Cmp(">=", bs, Const(1)), Cmp("<=", bs, Const(8))], ["bs"])
    refuted = solver.check(Cmp(">=", bs, Const(1)), Cmp(">", bs, Const(4)))
    assert refuted.verdict is Verdict.REFUTED and refuted.model == {"bs": 5}
    proved = solver.check(Cmp(">=", bs, Const(1)), Cmp(">", bs, Const(8)))
    assert proved.verdict is Verdict.PROVED
