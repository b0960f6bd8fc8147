"""A runner whose width depends on a constructor parameter is a runner per value of it; the
profile bounds a per-step runner's `step` below `speculative_num_steps` (one runner per draft
step), so counterexamples name a step that exists."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan

ENUM = Path("fixtures/runtime/forward_mode.py").read_text()

RUNNER = """from forward_mode import ForwardMode


class PerStepDraftExtendRunner:
    def __init__(self, eagle_worker, PARAM):
        model_runner = eagle_worker.model_runner
        self.capture_forward_mode = ForwardMode.DRAFT_EXTEND_V2
        self.num_tokens_per_bs = model_runner.server_args.speculative_num_steps + 1 + PARAM
"""

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps
        self.qo_indptr = torch.zeros((model_runner.max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            n = self.steps + 1
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * n + 1, n)
"""


def counterexamples(tmp_path: Path, param: str) -> list[dict[str, int]]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "runner.py").write_text(RUNNER.replace("PARAM", param))
    (tmp_path / "backend.py").write_text(BACKEND)
    result = scan([str(tmp_path)])
    assert result.errors == []
    assert [(f.code, f.mode) for f in result.findings] == [("IDX001", "DRAFT_EXTEND_V2")]
    return [dict(f.counterexample) for f in result.findings]


def test_a_step_runner_counterexample_names_an_existing_step(tmp_path: Path) -> None:
    (found,) = counterexamples(tmp_path, "step")
    step = found["PerStepDraftExtendRunner.step"]
    assert 1 <= step < found["speculative_num_steps"]


def test_another_parameter_is_bounded_below_only(tmp_path: Path) -> None:
    (found,) = counterexamples(tmp_path, "extra")
    assert found["PerStepDraftExtendRunner.extra"] >= 1
