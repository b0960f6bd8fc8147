"""Constraints of one mode that hold where the scanned tree states them (`MODE_CONSTRAINTS`):
SGLang 0.5.9 to 0.5.12 keep EAGLE with topk > 1 off the spec v2 workers, and say so, so a
DRAFT_EXTEND_V2 obligation against a runner that captures in DRAFT_EXTEND for a v1 worker (and
in DRAFT_EXTEND_V2 only for a v2 one) is checked with topk == 1 there. A runner that captures in
DRAFT_EXTEND_V2 whatever its worker, a tree without the statement, and every other mode keep
the whole domain."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.config import Config

from .runner_texts import DRAFT_EXTEND_RUNNER, ENUM

# The gate as the server arguments of 0.5.12 write it, in our own words around the message.
SERVER_ARGS = """class Args:
    def check_speculative(self):
        why = None
        if self.speculative_eagle_topk > 1 and not self.disable_overlap_schedule:
            self.disable_overlap_schedule = True
            why = "spec v2 currently only supports topk = 1"
        return why
"""

# Captures in DRAFT_EXTEND for a v1 worker and in DRAFT_EXTEND_V2 for a v2 one (EAGLE's).
SPLIT_RUNNER = DRAFT_EXTEND_RUNNER

# Captures in DRAFT_EXTEND_V2 whatever its worker (multi-layer EAGLE's in 0.5.9 to 0.5.12).
V2_RUNNER = """from forward_mode import ForwardMode


class V2OnlyGraphRunner:
    def __init__(self, eagle_worker, model_runner):
        self.capture_forward_mode = ForwardMode.DRAFT_EXTEND_V2
        self.num_tokens_per_bs = model_runner.server_args.speculative_num_draft_tokens
"""

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps
        self.qo_indptr = torch.zeros(65, dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, forward_mode):
        if forward_mode.PREDICATE():
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * STRIDE + 1, STRIDE)
"""


def findings(
    tmp_path: Path,
    predicate: str,
    stride: str,
    stated: bool = True,
    config: Config | None = None,
    runner: str = SPLIT_RUNNER,
) -> list[tuple[str, str, dict[str, int], tuple[str, ...]]]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "runner.py").write_text(runner)
    args = SERVER_ARGS if stated else SERVER_ARGS.replace("only supports topk = 1", "is off")
    (tmp_path / "server_args.py").write_text(args)
    backend = BACKEND.replace("PREDICATE", predicate).replace("STRIDE", stride)
    (tmp_path / "backend.py").write_text(backend)
    result = scan([str(tmp_path)], config)
    assert result.errors == []
    return [
        (f.code, f.mode, dict(f.counterexample or {}), f.explain)
        for f in result.findings
        if f.span.path.endswith("backend.py")
    ]


def test_a_stride_right_only_for_topk_1_is_proved_in_v2_draft_extend(tmp_path: Path) -> None:
    # `steps + 1` is the v2 width (num_draft_tokens) exactly when topk == 1.
    assert findings(tmp_path, "is_draft_extend_v2", "(self.steps + 1)") == []


def test_without_the_statement_topk_above_1_refutes_it(tmp_path: Path) -> None:
    found = findings(tmp_path, "is_draft_extend_v2", "(self.steps + 1)", stated=False)
    assert [(code, mode) for code, mode, _, _ in found] == [("IDX001", "DRAFT_EXTEND_V2")]
    assert found[0][2]["speculative_eagle_topk"] > 1


def test_a_runner_that_captures_only_in_v2_keeps_the_whole_domain(tmp_path: Path) -> None:
    found = findings(tmp_path, "is_draft_extend_v2", "(self.steps + 1)", runner=V2_RUNNER)
    assert [(code, mode) for code, mode, _, _ in found] == [("IDX001", "DRAFT_EXTEND_V2")]
    assert found[0][2]["speculative_eagle_topk"] > 1


def test_other_modes_keep_the_whole_domain(tmp_path: Path) -> None:
    found = findings(tmp_path, "is_target_verify", "(self.steps + 1)")
    assert [(code, mode) for code, mode, _, _ in found] == [("IDX001", "TARGET_VERIFY")]
    assert found[0][2]["speculative_eagle_topk"] > 1


def test_a_finding_under_the_constraint_cites_where_the_tree_states_it(tmp_path: Path) -> None:
    found = findings(tmp_path, "is_draft_extend_v2", "self.steps")
    assert [(code, mode) for code, mode, _, _ in found] == [("IDX001", "DRAFT_EXTEND_V2")]
    _, _, counterexample, explain = found[0]
    assert counterexample["speculative_eagle_topk"] == 1
    cited = [line for line in explain if line.startswith("tree constraint:")]
    assert len(cited) == 1
    assert "speculative_eagle_topk == 1 in DRAFT_EXTEND_V2" in cited[0]
    assert cited[0].endswith("server_args.py:6)")


def test_the_cached_tree_facts_follow_an_edit_of_the_statement(tmp_path: Path) -> None:
    config = replace(Config(), cache_dir=str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    tree.mkdir()
    assert findings(tree, "is_draft_extend_v2", "(self.steps + 1)", config=config) == []
    found = findings(tree, "is_draft_extend_v2", "(self.steps + 1)", stated=False, config=config)
    assert [(code, mode) for code, mode, _, _ in found] == [("IDX001", "DRAFT_EXTEND_V2")]
    assert findings(tree, "is_draft_extend_v2", "(self.steps + 1)", config=config) == []
