"""Findings in the operator's terms: the opaque conditions a counterexample needs (a minimal set
that forces the failure, never a pair the code rules out), configuration symbols shown apart
from the code's names, and the launch configuration that triggers a finding."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan

# A base class that declares `helper = None`; `__init__` sets it only under a flag. The site
# runs when there is no helper and one of two opaque conditions holds.
FLAGGED = """import torch


class BaseBackend:
    helper = None


class FlaggedBackend(BaseBackend):
    def __init__(self, model_runner, use_helper=False):
        args = model_runner.server_args
        self.num_draft_tokens = args.speculative_num_draft_tokens
        self.speculative_num_steps = args.speculative_num_steps
        max_bs = model_runner.req_to_token_pool.size
        self.qo_indptr = torch.zeros((max_bs + 1,), dtype=torch.int64)
        if use_helper:
            self.helper = make_helper(self)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, seq_lens, forward_mode, spec_info):
        if self.helper is not None:
            return self.helper.capture(bs)
        if forward_mode.is_draft_extend_v2():
            if spec_info.tree or spec_info.chain:
                per_req = self.speculative_num_steps + 1
                qo_indptr = self.qo_indptr[: bs + 1]
                qo_indptr[: bs + 1] = torch.arange(0, bs * per_req + 1, step=per_req, dtype=torch.int32)
"""


def _only(tmp_path: Path, text: str, name: str = "backend.py"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text)
    result = scan([str(path)])
    assert result.errors == []
    assert len(result.findings) == 1, result.findings
    return result.findings[0]


def test_conditions_are_a_minimal_set_that_forces_the_failure(tmp_path: Path) -> None:
    """`spec_info.tree or spec_info.chain`: neither alone is necessary, one of them is needed;
    the class-level `helper = None` is the value where `__init__` sets none, so the path needs
    the flag off, not `self.helper is None` together with the flag on."""
    finding = _only(tmp_path, FLAGGED)
    conditions = dict(finding.conditions)
    assert conditions.get("use_helper") is False
    assert "self.helper is None" not in conditions
    assert [k for k in conditions if k.startswith("spec_info.")] in (
        ["spec_info.tree"],
        ["spec_info.chain"],
    )
    assert all(conditions[k] is True for k in conditions if k.startswith("spec_info."))
