"""`super()` in a base's method reaches the bases of that base (`ClassInterpreter.supers`):
a constructor chain of three classes, each calling `super().__init__()`, leaves the attributes
the first one sets. The backends here are built in the test."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan

CHAIN = """import torch


class RootBackend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps


class MiddleBackend(RootBackend):
    def __init__(self, model_runner):
        super().__init__(model_runner)
        self.spare = None


class LeafBackend(MiddleBackend):
    def __init__(self, model_runner):
        super().__init__(model_runner)

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            self.forward_metadata = Plan(qo_indptr=torch.arange(0, bs * WIDTH + 1, step=WIDTH))
"""


def test_super_in_a_base_reaches_the_base_of_that_base(tmp_path: Path) -> None:
    (tmp_path / "backend.py").write_text(CHAIN.replace("WIDTH", "self.steps"))
    wrong = scan([str(tmp_path)])
    assert wrong.errors == []
    assert sorted({(f.code, f.span.line) for f in wrong.findings}) == [("IDX001", 23)]
    (tmp_path / "backend.py").write_text(CHAIN.replace("WIDTH", "self.ndt"))
    right = scan([str(tmp_path)])
    assert right.findings == []
    assert right.stats.unsupported == 0
