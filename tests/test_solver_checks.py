"""The solver builds z3 terms without z3's Python-side argument checks (`Z3_DEBUG` off): a term
of the wrong sort is still refused, by z3's C API, with an error instead of a wrong answer. It
keeps the translation of each formula for the questions that follow: the answers are those of
fresh translations."""

from __future__ import annotations

import pytest

from idxcheck.model.verdicts import Verdict
from idxcheck.solve.solver import Solver
from idxcheck.sym.terms import Cmp, Const, Sym


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


def test_kept_translations_give_the_answers_of_fresh_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from idxcheck.solve import solver as solver_module
    from idxcheck.sym.terms import Atom, conj

    bs, topk = Sym("bs"), Sym("topk")
    domain = [Cmp(">=", bs, Const(1)), Cmp("<=", bs, Const(8)), Cmp(">=", topk, Const(1))]
    path = conj(Cmp(">=", bs, Const(2)), Atom("spec", "speculative decoding is on"))
    questions = [
        (path, Cmp(">", bs, Const(4))),
        (path, Cmp(">", bs, Const(8))),
        (path, Cmp("<", topk, Const(0))),
        (conj(path, Cmp(">", bs, Const(9))), Cmp(">", bs, Const(1))),
    ]
    translated: list[object] = []
    original = solver_module._Translator._formula

    def spy(self, formula):  # type: ignore[no-untyped-def]
        # The translations kept are those of z3's main context; a counterexample is read in a
        # context of its own, where its question is translated once more.
        if self.ctx is None:
            translated.append(formula)
        return original(self, formula)

    monkeypatch.setattr(solver_module._Translator, "_formula", spy)
    kept = Solver(domain, ["bs", "topk"])
    answers = [kept.check(*q) for q in questions]
    assert [a.verdict for a in answers] == [
        Verdict.REFUTED,
        Verdict.PROVED,
        Verdict.PROVED,
        Verdict.UNREACHABLE,
    ]
    assert answers[0].model == {"bs": 5} and answers[0].atoms == {"spec": True}
    assert translated.count(path) == 1, "the shared path condition is translated once"
    # The fourth question's path condition is another conjunction that holds `path`'s
    # conjuncts: they are translated once, the new conjunction alone is.
    spec = Atom("spec", "speculative decoding is on")
    assert translated.count(spec) == 1 and translated.count(questions[3][0]) == 1
    for question, answer in zip(questions, answers, strict=True):
        fresh = Solver(domain, ["bs", "topk"])
        assert fresh.check(*question) == answer
    kept.forget_translations()
    translated.clear()
    assert kept.check(*questions[0]) == answers[0]
    assert translated.count(path) == 1, "translated again once forgotten"


def test_a_counterexample_names_the_variables_of_its_question_only() -> None:
    """Translations shared between questions keep each question's own variables: a symbol or
    opaque condition of another question does not enter this one's counterexample."""
    from idxcheck.sym.terms import Atom, conj

    bs, n = Sym("bs"), Sym("n")
    solver = Solver([Cmp(">=", bs, Const(1)), Cmp(">=", n, Const(1))], ["bs", "n"])
    other = conj(Cmp(">=", n, Const(3)), Atom("graph", "in a CUDA graph"))
    solver.check(other, Cmp(">", n, Const(5)))
    answer = solver.check(Cmp(">=", bs, Const(2)), Cmp(">", bs, Const(4)))
    assert answer.verdict is Verdict.REFUTED
    assert answer.model == {"bs": 5} and answer.atoms == {}
