"""Roles by destination (`idxcheck.interp.destinations`): a value kept under a name of its own
has the role of the role-named parameter it reaches: a library entry's (the profile's
`ROLE_CALLS`, by position), a Triton kernel's or module function's of the scanned tree, a
helper method's. Each backend here is built in the test."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult

BACKEND = """import torch


class OwnWordsBackend:
    def __init__(self, model_runner):
        self.window = model_runner.server_args.speculative_num_draft_tokens
        # The file names a role (a class is read only then): here in `__init__`, no site.
        self.max_qo_len = self.window

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            bounds = torch.arange(0, bs + 1, dtype=torch.int32)
            CALL
"""


def _scan(tmp_path: Path, call: str, extra: dict[str, str] | None = None) -> ScanResult:
    (tmp_path / "backend.py").write_text(BACKEND.replace("CALL", call))
    for name, text in (extra or {}).items():
        (tmp_path / name).write_text(text)
    result = scan([str(tmp_path)])
    assert result.errors == []
    return result


def _flagged(result: ScanResult) -> list[tuple[str, int]]:
    return sorted((f.code, f.span.line) for f in result.findings)


def test_a_library_entry_gives_its_role_by_position(tmp_path: Path) -> None:
    result = _scan(tmp_path, "flash_attn_varlen_func(q, k, v, bounds, None, self.window)")
    assert ("IDX001", 13) in _flagged(result)
    finding = next(f for f in result.findings if f.code == "IDX001")
    reached = [r.message for r in finding.related if r.role == "binding"]
    assert reached == [
        "reaches parameter `cu_seqlens_q` (argument 4) of `flash_attn_varlen_func` here"
    ]
    # Another position is not the index pointer.
    other = _scan(tmp_path, "flash_attn_varlen_func(q, k, v, None, bounds, self.window)")
    assert _flagged(other) == []


def test_a_keyword_names_the_call_it_reaches(tmp_path: Path) -> None:
    result = _scan(tmp_path, "flash_attn_varlen_func(q, k, v, cu_seqlens_q=bounds)")
    finding = next(f for f in result.findings if f.code == "IDX001")
    reached = [r.message for r in finding.related if r.role == "binding"]
    assert reached == ["reaches `cu_seqlens_q=` of `flash_attn_varlen_func` here"]


def test_a_decode_wrapper_s_plan_is_not_a_query_pointer(tmp_path: Path) -> None:
    # FlashInfer's decode wrappers take the KV index pointer first.
    assert _flagged(_scan(tmp_path, "self.decode_wrapper.plan(bounds, None)")) == []
    assert _flagged(_scan(tmp_path, "self.prefill_wrapper.plan(bounds, None)")) == [("IDX001", 13)]


KERNEL = """import triton


@triton.jit
def rows_kernel(out_ptr, PARAM, max_rows):
    pass
"""


def test_a_kernel_of_another_file_gives_its_parameter_s_role(tmp_path: Path) -> None:
    call = "rows_kernel[(bs,)](forward_batch.out, bounds, self.window)"
    flagged = _scan(tmp_path, call, {"kernels.py": KERNEL.replace("PARAM", "cu_seqlens_q")})
    assert _flagged(flagged) == [("IDX001", 13)]
    plain = _scan(tmp_path, call, {"kernels.py": KERNEL.replace("PARAM", "row_ptr")})
    assert _flagged(plain) == []


def test_an_edit_of_the_kernel_s_signature_analyses_its_callers_again(tmp_path: Path) -> None:
    # With the cache, the caller's file is unchanged: its stored analysis must not be reused
    # once the parameter it hands its value to loses its role.
    call = "rows_kernel[(bs,)](forward_batch.out, bounds, self.window)"
    config = Config(cache_dir=str(tmp_path / "cache"))
    tree = tmp_path / "tree"
    tree.mkdir()
    tmp_path = tree
    (tmp_path / "backend.py").write_text(BACKEND.replace("CALL", call))
    (tmp_path / "kernels.py").write_text(KERNEL.replace("PARAM", "cu_seqlens_q"))
    first = scan([str(tmp_path)], config)
    assert _flagged(first) == [("IDX001", 13)]
    (tmp_path / "kernels.py").write_text(KERNEL.replace("PARAM", "row_ptr"))
    second = scan([str(tmp_path)], config)
    assert _flagged(second) == []


def test_a_helper_s_role_named_parameter_gives_its_role(tmp_path: Path) -> None:
    text = BACKEND.replace("CALL", "self._launch(bounds)") + (
        "\n    def _launch(self, cu_seqlens_q):\n        ops.attention(cu_seqlens_q)\n"
    )
    (tmp_path / "backend.py").write_text(text)
    result = scan([str(tmp_path)])
    assert _flagged(result) == [("IDX001", 13)]


def test_a_value_not_modelled_at_a_parameter_adds_nothing_unsupported(tmp_path: Path) -> None:
    result = _scan(tmp_path, "flash_attn_varlen_func(q, k, v, forward_batch_bounds(), None, 1)")
    assert result.stats.unsupported == 0


def test_a_helper_parameter_nothing_reads_gives_no_role(tmp_path: Path) -> None:
    text = BACKEND.replace("CALL", "self._launch(bounds)") + (
        "\n    def _launch(self, cu_seqlens_q):\n        ops.attention(self.window)\n"
    )
    (tmp_path / "backend.py").write_text(text)
    assert _flagged(scan([str(tmp_path)])) == []


def test_a_helper_handing_on_its_parameter_keeps_it_with_its_pointer(tmp_path: Path) -> None:
    # One token per segment (a per-token pointer) with a grid of one row: consistent where
    # both are handed to the helper; the helper's own call hands on the grid scalar alone.
    text = """import torch


class PerTokenBackend:
    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_target_verify():
            tokens = forward_batch.input_ids.shape[0]
            self._prepare(torch.arange(0, tokens + 1, dtype=torch.int32), 1)

    def _prepare(self, qo_indptr, max_seqlen_q):
        self._reserve(max_seqlen_q)
        ops.plan_tokens(qo_indptr)

    def _reserve(self, max_seqlen_q):
        ops.reserve(max_seqlen_q)
"""
    (tmp_path / "backend.py").write_text(text)
    result = scan([str(tmp_path)])
    assert result.errors == []
    assert result.findings == []
    assert result.stats.proved > 0
