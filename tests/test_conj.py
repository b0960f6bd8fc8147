"""`conj` against the plain definition it shortcuts: flatten conjunctions, drop `True` and
repeats, `False` on `False` or on a conjunct and its negation. The same node (interned, so
`is`) for random arguments."""

from __future__ import annotations

import itertools
import random

import pytest

from idxcheck.sym.terms import FALSE, TRUE, And, Atom, Const, Formula, Sym, cmp, conj, disj, neg


def reference(*args: Formula) -> Formula:
    flat: list[Formula] = []
    seen: set[Formula] = set()
    for arg in args:
        if arg == FALSE:
            return FALSE
        if arg == TRUE:
            continue
        for part in arg.args if isinstance(arg, And) else (arg,):
            if part not in seen:
                if neg(part) in seen:
                    return FALSE
                seen.add(part)
                flat.append(part)
    if not flat:
        return TRUE
    if len(flat) == 1:
        return flat[0]
    return And(tuple(flat))


def _formula(rng: random.Random, depth: int = 0) -> Formula:
    pick = rng.randrange(9 if depth < 2 else 5)
    if pick == 0:
        return rng.choice([TRUE, FALSE])
    if pick in (1, 2):
        return Atom(f"a{rng.randrange(4)}", "a")
    if pick in (3, 4):
        return cmp(rng.choice(["<", "==", ">="]), Sym(rng.choice(["bs", "n"])), Const(2))
    if pick == 5:
        return neg(_formula(rng, depth + 1))
    if pick == 6:
        return disj(_formula(rng, depth + 1), _formula(rng, depth + 1))
    parts = [_formula(rng, depth + 1) for _ in range(rng.randrange(2, 4))]
    return And(tuple(parts)) if pick == 7 else reference(*parts)


@pytest.mark.parametrize("seed", range(4))
def test_conj_is_the_plain_definition(seed: int) -> None:
    rng = random.Random(seed)
    kinds = set()
    for _ in range(2_000):
        args = [_formula(rng) for _ in range(rng.choice([0, 1, 2, 2, 2, 3, 4]))]
        expected = reference(*args)
        assert conj(*args) is expected, args
        kinds.add(type(expected).__name__)
    assert {"And", "BoolConst", "Atom", "Cmp"} <= kinds


def test_the_two_argument_shortcut() -> None:
    a, b = Atom("a", "a"), cmp("<", Sym("bs"), Const(3))
    assert conj(a, a) is a
    assert conj(a, neg(a)) is FALSE and conj(neg(b), b) is FALSE
    assert conj(a, b) == And((a, b)) and conj(b, a) == And((b, a))


def test_answers_are_remembered_per_file_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from idxcheck.sym import terms

    terms.forget_specialisations()
    a, b = Atom("a", "a"), cmp("<", Sym("bs"), Const(3))
    first = conj(a, b)
    assert terms._CONJ_MEMO[(a, b)] is first and conj(a, b) is first
    assert disj(a, b) is terms._DISJ_MEMO[(a, b)]
    terms.forget_specialisations()  # after each file
    assert not terms._CONJ_MEMO and not terms._DISJ_MEMO
    monkeypatch.setattr(terms, "MAX_MEMO", 3)
    atoms = [Atom(f"x{i}", "x") for i in range(8)]
    for left, right in itertools.pairwise(atoms):
        assert conj(left, right) is reference(left, right)
        assert len(terms._CONJ_MEMO) <= 3
    terms.forget_specialisations()


@pytest.mark.parametrize("seed", range(4))
def test_path_conditions_grown_one_condition_at_a_time(seed: int) -> None:
    """The interpreter's shape: a path condition that `conj` made, and one more condition;
    also a conjunction built elsewhere with the same parts, which is the same interned node."""
    rng = random.Random(seed)
    falses = grown = 0
    for _ in range(300):
        path: Formula = TRUE
        for _ in range(rng.randrange(1, 12)):
            more = _formula(rng, 1)
            expected = reference(path, more)
            assert conj(path, more) is expected, (path, more)
            path = expected
            if path is FALSE:
                falses += 1
                break
            if isinstance(path, And) and len(path.args) > 2:
                grown += 1
                again = And(tuple(path.args))
                assert again is path and conj(again, more) is reference(again, more)
    assert falses and grown
