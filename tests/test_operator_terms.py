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


REGISTRY = """from backend import DraftExtendBackend


@register_attention_backend("toy_draft")
def create_toy_draft_backend(runner):
    return DraftExtendBackend(runner)
"""


def test_a_finding_prints_the_launch_that_triggers_it(tmp_path: Path) -> None:
    """Flags as SGLang spells them, with the counterexample's values; the backend's registered
    name; the mode's algorithm and spec-v2 switch; the batch size as what happens at run
    time."""
    from .conftest import FIXTURES

    (tmp_path / "backend.py").write_text((FIXTURES / "bugs/eagle_draft_extend_v2.py").read_text())
    (tmp_path / "attention_registry.py").write_text(REGISTRY)
    result = scan([str(tmp_path)])
    stride = next(f for f in result.findings if f.code == "IDX001")
    launch = stride.launch
    assert launch is not None
    cex = stride.counterexample
    assert launch.command == (
        "SGLANG_ENABLE_SPEC_V2=1 python -m sglang.launch_server --model-path MODEL "
        "--attention-backend toy_draft --speculative-algorithm EAGLE "
        f"--speculative-eagle-topk {cex['speculative_eagle_topk']} "
        f"--speculative-num-steps {cex['speculative_num_steps']} "
        f"--speculative-num-draft-tokens {cex['speculative_num_draft_tokens']}"
    )
    assert f"batch size {cex['bs']}" in launch.runtime
    assert launch.unknown == ()


def test_launch_settings_of_the_multi_layer_front_rows_and_unknown_symbols() -> None:
    """`num_front_tokens` takes multi-layer EAGLE, the boundary-KV fix's variable and a hybrid
    model, and nothing at 0; a symbol the profile knows no setting for is named as such."""
    from idxcheck.check.launch import UNKNOWN_BACKEND, launch_of
    from idxcheck.profiles.schema import load_profile

    spec = load_profile("sglang").launch
    cex = {"speculative_eagle_topk": 1, "speculative_num_steps": 2, "num_front_tokens": 1, "sm": 9}
    launch = launch_of(spec, cex, "DRAFT_EXTEND_V2", "SomeBackend", ())
    assert launch is not None
    words = launch.command.split()
    assert "--enable-multi-layer-eagle" in words
    assert words[:2] == ["SGLANG_ENABLE_SPEC_V2=1", "SGLANG_ENABLE_MTP_BOUNDARY_KV_FIX=1"]
    assert f"--attention-backend {UNKNOWN_BACKEND}" in launch.command
    assert any("hybrid linear-attention model" in m for m in launch.model)
    assert launch.unknown == ("sm",)
    off = launch_of(spec, {**cex, "num_front_tokens": 0}, "DRAFT_EXTEND_V2", "B", ("triton",))
    assert off is not None
    assert "--enable-multi-layer-eagle" not in off.command
    assert "MTP_BOUNDARY_KV_FIX" not in off.command and off.model == ()
    assert "--attention-backend triton" in off.command


def test_symbols_print_apart_from_the_code_names(tmp_path: Path) -> None:
    """`self.num_draft_tokens` in the code and the symbol of the same short name: the symbol
    is written in braces wherever a term is shown; a comparison whose sides share a symbol is
    also shown with it cancelled."""
    from idxcheck.check.build import _cancelled
    from idxcheck.sym.render import render_formula
    from idxcheck.sym.terms import Cmp, Sym, binop

    finding = _only(tmp_path, FLAGGED)
    assert "`{num_draft_tokens}`" in finding.message
    assert "fails whenever: {num_steps} + 1 != {num_draft_tokens}" in finding.explain
    ndt, front = Sym("speculative_num_draft_tokens"), Sym("num_front_tokens")
    cancelled = _cancelled(Cmp("!=", ndt, binop("+", ndt, front)))
    assert cancelled is not None
    assert render_formula(cancelled, {"num_front_tokens": "{num_front_tokens}"}) == (
        "{num_front_tokens} != 0"
    )
    assert _cancelled(Cmp("!=", ndt, front)) is None
