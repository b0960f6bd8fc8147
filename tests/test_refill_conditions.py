"""Where a buffer is written in place, as the run that reads its preset sees it
(`idxcheck.interp.stores.written_where`): the forward mode, the configuration and the opaque
conditions are shared by the writing run and the reading one; a comparison of a number the
writer read from its own batch is not, and is taken as letting the write run."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
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
    # shared part once per path to it (here 2 ** 12 times), and the writes of one file's
    # analysis share their conditions' prefixes: the answers are kept until the file is done.
    from idxcheck.sym import terms

    seen: list[object] = []
    reads = terms._reads_runtime

    def counted(term: object) -> bool:
        seen.append(term)
        return reads(term)  # type: ignore[arg-type]

    terms.forget_specialisations()
    monkeypatch.setattr(terms, "_reads_runtime", counted)
    pc = conj(RAGGED, WIDE)
    for depth in range(12):
        pc = disj(conj(pc, Atom(f"a{depth}", "a")), conj(neg(pc), Atom(f"b{depth}", "b")))
    assert written_where(pc) != FALSE
    assert len(seen) <= 2
    # Another write under a condition that extends this one walks only what is new.
    assert written_where(conj(pc, Atom("c", "c"))) != FALSE
    assert len(seen) <= 2
    # After the file, nothing is kept: the same condition is weakened again.
    terms.forget_specialisations()
    assert written_where(pc) != FALSE
    assert 2 < len(seen) <= 4


# The shape of SGLang 0.5.23's Intel XPU backend: one graph entry for capture and replay, whose
# stride-1 preset is rewritten in place only where the rows per request, read from the batch
# (`spec_info.num_tokens_per_req`), are above one; the eager path lays out the configured
# window. At run time the batch's rows are that window, so the preset is always rewritten in
# target verify.
ROWS_FROM_THE_BATCH = """import torch


class Plan:
    def __init__(self):
        self.cu_seqlens_q = None
        self.max_seqlen_q = 0


class UnifiedGraphBackend:
    def __init__(self, model_runner):
        self.window = model_runner.server_args.speculative_num_draft_tokens
        self.graph_plans = {}

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.presets = {"cu_seqlens_q": torch.arange(0, max_bs + 1, dtype=torch.int32)}

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        plan = Plan()
        if forward_batch.forward_mode.is_target_verify():
            plan.max_seqlen_q = self.window
            plan.cu_seqlens_q = torch.arange(0, bs * self.window + 1, self.window)
        self.forward_metadata = plan

    def _rows(self, is_verify, spec_info):
        if is_verify:
            return spec_info.num_tokens_per_req
        return 1

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        bs = forward_batch.batch_size
        spec_info = forward_batch.spec_info
        is_verify = forward_batch.forward_mode.is_target_verify()
        if not (is_verify or forward_batch.forward_mode.is_decode()):
            return
        rows = self._rows(is_verify, spec_info)
        if in_capture:
            plan = Plan()
            plan.cu_seqlens_q = self.presets["cu_seqlens_q"][: bs + 1]
            self.graph_plans[bs] = plan
        plan = self.graph_plans[bs]
        if rows > 1:
            plan.max_seqlen_q = rows
            plan.cu_seqlens_q[: bs + 1].copy_(torch.arange(0, (bs + 1) * rows, rows))
        else:
            plan.max_seqlen_q = 1
        self.forward_metadata = plan
"""


def test_a_write_under_the_batch_s_own_width_refills_the_preset(tmp_path: Path) -> None:
    (tmp_path / "backend.py").write_text(ROWS_FROM_THE_BATCH)
    result = scan([str(tmp_path)])
    assert result.errors == []
    assert result.findings == []


def test_without_the_weakening_the_capture_is_compared_where_rows_are_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the test above guards against: the write's whole condition kept, the capture's
    # preset is compared with the eager path where the batch's rows are 1, which no target
    # verify batch of this server has.
    from idxcheck.interp import stores

    monkeypatch.setattr(stores, "written_where", lambda pc: pc)
    (tmp_path / "backend.py").write_text(ROWS_FROM_THE_BATCH)
    result = scan([str(tmp_path)])
    found = [(f.code, f.mode, f.span.line) for f in result.findings]
    assert found == [("IDX003", "TARGET_VERIFY", 23)]
