"""Runtime values the profile knows to be true in a mode (`RUNTIME_FACTS`): the EAGLE v1
worker hands the draft extend one accepted count per request, so a branch for an empty list
of CPU accept counts does not run in DRAFT_EXTEND. The same branch in another mode is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan

ENUM = Path("fixtures/runtime/forward_mode.py").read_text()

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.PREDICATE():
            if spec_info.accept_length_cpu:
                self.max_extend_len = self.steps + 1
            else:
                self.max_extend_len = 1
"""


def findings(
    tmp_path: Path, predicate: str, attr: str = "accept_length_cpu"
) -> list[tuple[str, str, int]]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    backend = BACKEND.replace("PREDICATE", predicate).replace("accept_length_cpu", attr)
    (tmp_path / "backend.py").write_text(backend)
    result = scan([str(tmp_path)])
    assert result.errors == []
    return [(f.code, f.mode, f.span.line) for f in result.findings]


@pytest.mark.parametrize(
    "attr", ["accept_length_cpu", "num_accepted_tokens_cpu", "num_accept_tokens_cpu"]
)
def test_the_empty_accept_counts_branch_does_not_run_in_v1_draft_extend(
    tmp_path: Path, attr: str
) -> None:
    """Under each release's name for the CPU accept counts (to 0.5.10, 0.5.11, from 0.5.12)."""
    assert findings(tmp_path, "is_draft_extend", attr) == []


def test_another_attribute_of_the_same_shape_is_not_assumed(tmp_path: Path) -> None:
    assert ("IDX002", "DRAFT_EXTEND", 13) in findings(
        tmp_path, "is_draft_extend", "num_rejected_tokens_cpu"
    )


def test_the_same_branch_in_a_mode_without_the_fact_is_checked(tmp_path: Path) -> None:
    # Line 13 is the branch for no accept counts (line 11, `steps + 1`, is below the verify
    # width once topk > 1).
    assert ("IDX002", "TARGET_VERIFY", 13) in findings(tmp_path, "is_target_verify")


COMPARED = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_draft_extend():
            if 1 == forward_batch.spec_info.accept_length_cpu:
                self.max_extend_len = self.steps + 1
            else:
                self.max_extend_len = 1
"""


def test_only_the_value_itself_is_known_not_a_comparison_of_it(tmp_path: Path) -> None:
    """`1 == forward_batch.spec_info.accept_length_cpu` ends with the fact's path, but its truth
    is not the list's: the branch it guards is still checked."""
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "backend.py").write_text(COMPARED)
    result = scan([str(tmp_path)])
    assert result.errors == []
    assert [(f.code, f.mode, f.span.line) for f in result.findings] == [
        ("IDX002", "DRAFT_EXTEND", 13)
    ]
