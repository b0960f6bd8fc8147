"""Where a buffer is written in place, as the run that reads its preset sees it
(`idxcheck.interp.stores.written_where`): the forward mode, the configuration and the opaque
conditions are shared by the writing run and the reading one; a comparison of a number the
writer read from its own batch is not, and is taken as letting the write run."""

from __future__ import annotations

import pytest

from idxcheck.interp.stores import written_where
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    Atom,
    Const,
    ModeIs,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    cmp,
    conj,
    disj,
    neg,
)

RAGGED = Atom("ragged", "spec_info.ragged_layout is not None")
VERIFY = ModeIs(frozenset({"TARGET_VERIFY"}))
WIDE = cmp(">", RuntimeWidth(), Const(1))  # `rows > 1`, rows read from the batch
TOPK = cmp(">", Sym("speculative_eagle_topk"), Const(1))


def test_shared_conditions_are_kept() -> None:
    pc = conj(VERIFY, RAGGED, TOPK)
    assert written_where(pc) == pc


def test_a_runtime_comparison_lets_the_write_run() -> None:
    assert written_where(WIDE) == TRUE
    assert written_where(conj(VERIFY, WIDE)) == VERIFY
    # Under a negation it is taken as false, so that the negation holds: the result is still
    # implied by the condition (the write is never placed on fewer paths than it runs on).
    assert written_where(neg(WIDE)) == TRUE
    # `not (ragged and rows > 1)` may hold for a ragged batch too (rows of one): only the mode
    # is left; beside the comparison, the opaque condition stays.
    assert written_where(conj(VERIFY, neg(conj(RAGGED, WIDE)))) == VERIFY
    assert written_where(conj(VERIFY, neg(RAGGED), WIDE)) == conj(VERIFY, neg(RAGGED))
    assert written_where(disj(RAGGED, cmp("<", RuntimeInt("max(lens)"), Sym("bs")))) == TRUE


def test_a_shared_subformula_is_weakened_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Path conditions are DAGs; a walk that did not keep what it weakened would visit the
    # shared part once per path to it (here 2 ** 12 times).
    from idxcheck.interp import stores

    seen: list[object] = []
    reads = stores._reads_runtime

    def counted(term: object) -> bool:
        seen.append(term)
        return reads(term)  # type: ignore[arg-type]

    monkeypatch.setattr(stores, "_reads_runtime", counted)
    pc = conj(RAGGED, WIDE)
    for depth in range(12):
        pc = disj(conj(pc, Atom(f"a{depth}", "a")), conj(neg(pc), Atom(f"b{depth}", "b")))
    assert written_where(pc) != FALSE
    assert len(seen) <= 2
