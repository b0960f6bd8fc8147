"""The replay engine on the CPU (Triton interpreter, capture emulated).

Small head dims and few heads keep each replay well under a second; which rows get computed
depends only on the indexing, not on the head count or size.
"""

from __future__ import annotations

import random

import pytest

from idxcheck.runtime_kernels.layout import predict_rows, uniform_indptr
from idxcheck.runtime_kernels.replay import ReplayCase, ReplayResult

pytestmark = pytest.mark.usefixtures("runtime")

HD = 32  # head dim for CPU tests


def _replay(case: ReplayCase) -> ReplayResult:
    from idxcheck.runtime_kernels.replay import replay

    return replay(case, device="cpu")


def _predicted(case: ReplayCase, block_m: int):  # type: ignore[no-untyped-def]
    return predict_rows(
        bs=case.bs,
        capture_bs=case.padded_bs,
        tokens_per_req=case.tokens_per_req,
        qo_indptr=uniform_indptr(case.padded_bs, case.qo_stride),
        max_len=case.max_len,
        block_m=block_m,
    )


def test_motivating_bug_rows_match_the_probe_map() -> None:
    # (bs, topk, steps, ndt) = (2, 4, 3, 8): backend stride and max_len steps+1 = 4, runner W = 8.
    case = ReplayCase(bs=2, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=HD)
    result = _replay(case)
    assert result.block_m == 128  # CPU emulates the H200's default for head dim <= 128
    assert result.rows_total == 16
    assert result.unwritten_rows == tuple(range(8, 16))
    assert result.wrong_rows == (4, 5, 6, 7)
    assert result.rel_error is not None and result.rel_error > 0.1
    assert result.reproduced
    assert result.probe is not None
    assert result.probe.unwritten == result.unwritten_rows
    assert result.probe.wrong == result.wrong_rows
    assert result.probe.rows.computed_as[4:8] == ((1, 0), (1, 1), (1, 2), (1, 3))
    assert result.probe.heads_disagree == 0
    assert result.stray_write_rows == 0 and result.stray_read_rows == 0


def test_fixed_variant_is_clean() -> None:
    case = ReplayCase(bs=2, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=HD).fixed()
    result = _replay(case)
    assert (case.qo_stride, case.max_len) == (8, 8)
    assert not result.reproduced
    assert result.rows_unwritten == 0 and result.rows_wrong == 0
    assert result.rel_error is not None and result.rel_error < 1e-4


@pytest.mark.parametrize(("block_m", "unwritten"), [(128, 0), (32, 32), (16, 64)])
def test_latent_grid_mismatch_depends_on_block_size(block_m: int, unwritten: int) -> None:
    # Stride right (48), max_len 4: the grid covers cdiv(4, BLOCK_M) * BLOCK_M positions.
    case = ReplayCase(
        bs=2,
        tokens_per_req=48,
        qo_stride=48,
        max_len=4,
        block_m=block_m,
        head_dim=HD,
        num_heads=2,
        num_kv_heads=1,
    )
    result = _replay(case)
    assert result.block_m == block_m
    assert result.rows_unwritten == unwritten
    assert result.rows_wrong == 0
    assert result.reproduced == (unwritten > 0)
    assert result.probe is not None and result.probe.unwritten == result.unwritten_rows


def test_domain_table_gqa_case() -> None:
    # (4, 8, 3, 16) with GQA: 48 of 64 rows never written.
    case = ReplayCase(
        bs=4, tokens_per_req=16, qo_stride=4, max_len=4, head_dim=HD, num_heads=4, num_kv_heads=1
    )
    result = _replay(case)
    assert result.rows_unwritten == 48 and result.rows_total == 64


def test_topk_one_is_correct() -> None:
    result = _replay(ReplayCase(bs=2, tokens_per_req=4, qo_stride=4, max_len=4, head_dim=HD))
    assert not result.reproduced


def test_padded_capture_batch_turns_unwritten_into_wrong() -> None:
    case = ReplayCase(bs=2, capture_bs=4, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=HD)
    result = _replay(case)
    assert result.unwritten_rows == ()
    assert result.wrong_rows == tuple(range(4, 16))
    assert result.probe is not None and result.probe.wrong == result.wrong_rows


def test_stride_past_width_is_seen_through_the_guards() -> None:
    # ndt < steps + 1: one request of 3 tokens, stride 4: the kernel writes row 3 past the
    # 3-row buffer and loads past it; the guards make both visible, the real rows stay right.
    case = ReplayCase(bs=1, tokens_per_req=3, qo_stride=4, max_len=4, head_dim=HD)
    result = _replay(case)
    assert result.rows_unwritten == 0 and result.rows_wrong == 0
    assert result.stray_write_rows == 1
    assert result.stray_read_rows == 3
    assert result.reproduced


def test_fp16_on_the_interpreter() -> None:
    case = ReplayCase(bs=2, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=HD, dtype="float16")
    result = _replay(case)
    assert result.dtype == "float16"
    assert result.unwritten_rows == tuple(range(8, 16)) and result.wrong_rows == (4, 5, 6, 7)


def test_bf16_is_refused_on_the_interpreter() -> None:
    from idxcheck.runtime_kernels.replay import ReplaySession

    with pytest.raises(ValueError, match="bf16"):
        ReplaySession(
            ReplayCase(bs=1, tokens_per_req=4, qo_stride=4, max_len=4, dtype="bfloat16"),
            device="cpu",
        )


def test_session_refills_in_place_and_replays_identically() -> None:
    import torch

    from idxcheck.runtime_kernels.replay import ReplaySession

    case = ReplayCase(bs=2, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=HD)
    session = ReplaySession(case, device="cpu")
    first, second = session.run(), session.run()
    assert first.unwritten_rows == second.unwritten_rows
    assert first.wrong_rows == second.wrong_rows
    # A refill that reallocates a captured buffer would leave the graph reading stale memory.
    session.qo_indptr = torch.zeros_like(session.qo_indptr)
    with pytest.raises(AssertionError, match="in place"):
        session.run()


def test_grid_is_frozen_at_capture() -> None:
    import torch

    from idxcheck.runtime_kernels.extend_attention import prepare_extend_attention

    q = torch.randn(64, 2, 16)
    k = torch.randn(64, 1, 16)
    o = torch.full_like(q, float("nan"))
    qo_indptr = torch.tensor([0, 4, 8], dtype=torch.int32)  # capture-time metadata
    kv_indptr = torch.zeros(3, dtype=torch.int32)
    kv_indices = torch.zeros(1, dtype=torch.int32)
    launch = prepare_extend_attention(
        q, k, k, o, k, k, qo_indptr, kv_indptr, kv_indices, 4, block_m=16
    )
    assert launch.grid == (2, 2, 1)
    # Replay-time metadata says 32 tokens per request; the frozen grid still reaches 16 of them.
    qo_indptr.copy_(torch.tensor([0, 32, 64], dtype=torch.int32))
    launch.run()
    written = ~torch.isnan(o).flatten(1).any(dim=1)
    assert written.tolist() == ([True] * 16 + [False] * 16) * 2


def test_random_cases_agree_with_probe_and_contract() -> None:
    rng = random.Random(7)
    for seed in range(10):
        bs = rng.randint(1, 3)
        case = ReplayCase(
            bs=bs,
            capture_bs=bs + rng.randint(0, 2),
            tokens_per_req=rng.randint(1, 12),
            qo_stride=rng.randint(0, 14),
            max_len=rng.randint(0, 14),
            block_m=rng.choice([1, 4, 5, 8, 16, 32]),
            head_dim=16,
            num_heads=2,
            num_kv_heads=rng.choice([1, 2]),
            seed=seed,
        )
        result = _replay(case)
        assert result.block_m is not None
        predicted = _predicted(case, result.block_m)
        assert result.probe is not None
        assert result.probe.rows.computed_as == predicted.computed_as, case
        assert result.unwritten_rows == predicted.unwritten, case
        assert result.wrong_rows == predicted.wrong, case
        assert result.probe.stray_rows == predicted.stray_rows, case


def test_subprocess_replay_gives_the_same_rows() -> None:
    # What replay_many does when this process's triton is in the other mode.
    from idxcheck.runtime_kernels.replay import ReplayError, _replay_in_subprocess

    case = ReplayCase(
        bs=2, tokens_per_req=8, qo_stride=4, max_len=4, head_dim=16, num_heads=2, num_kv_heads=1
    )
    bad = ReplayCase(bs=1, tokens_per_req=4, qo_stride=4, max_len=4, dtype="bfloat16")
    out = _replay_in_subprocess([case, bad], "cpu", None, None, True, 300.0)
    assert isinstance(out[0], ReplayResult)
    assert out[0].unwritten_rows == tuple(range(8, 16)) and out[0].wrong_rows == (4, 5, 6, 7)
    assert out[0].probe is not None and out[0].probe.wrong == (4, 5, 6, 7)
    assert isinstance(out[1], ReplayError) and "bf16" in out[1].reason
