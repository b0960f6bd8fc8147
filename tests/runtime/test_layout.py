"""The contract model in plain Python (no torch): block-size table and row predictions."""

from __future__ import annotations

import pytest

from idxcheck.runtime_kernels.layout import default_block_m, grid_rows, predict_rows, uniform_indptr


@pytest.mark.parametrize(
    ("head_dim", "capability", "expected"),
    [
        (128, (9, 0), 128),  # H100/H200
        (256, (9, 0), 64),  # 0.5.13 code: 64 for 129..256 (DOMAIN.md's summary says 128)
        (576, (9, 0), 32),  # MLA on Hopper
        (128, (10, 0), 64),  # B200
        (576, (10, 0), 16),
        (128, (8, 0), 128),  # A100
        (128, (8, 9), 64),  # L40/4090: small shared memory
        (576, (8, 6), 32),
        (128, (12, 0), 64),  # RTX Pro 6000
        (576, (12, 0), 32),
        (128, (7, 5), 64),  # older
        (576, (7, 0), 32),
        (128, (11, 0), 128),  # the release's `>= 9` branch catches other new parts
        (128, None, 128),  # CPU emulates sm90
        (576, None, 32),
    ],
)
def test_default_block_m_follows_the_release_table(
    head_dim: int, capability: tuple[int, int] | None, expected: int
) -> None:
    assert default_block_m(head_dim, capability) == expected


def test_grid_rows_is_cdiv_times_block() -> None:
    assert grid_rows(4, 128) == 128
    assert grid_rows(4, 32) == 32
    assert grid_rows(48, 32) == 64
    assert grid_rows(0, 32) == 0


def _predict(bs: int, w: int, stride: int, max_len: int, block_m: int, capture_bs: int = 0):  # type: ignore[no-untyped-def]
    cbs = capture_bs or bs
    return predict_rows(
        bs=bs,
        capture_bs=cbs,
        tokens_per_req=w,
        qo_indptr=uniform_indptr(cbs, stride),
        max_len=max_len,
        block_m=block_m,
    )


# DOMAIN.md section 1, measured on an H200 with the real kernel: (bs, topk, steps, ndt).
@pytest.mark.parametrize(
    ("bs", "w", "stride", "max_len", "block_m", "unwritten"),
    [
        (2, 8, 4, 4, 128, 8),  # (2,4,3,8) wrong stride: 8 of 16
        (2, 8, 8, 4, 128, 0),  # wrong max_extend_len only: latent
        (4, 16, 4, 4, 128, 48),  # (4,8,3,16): 48 of 64
        (4, 16, 16, 4, 128, 0),  # latent
        (2, 48, 4, 4, 32, 88),  # (2,8,3,48) head dim 576: 88 of 96
        (2, 48, 48, 4, 32, 32),  # wrong max_len only: 32 of 96
        (2, 4, 4, 4, 128, 0),  # topk 1: ndt == steps + 1
    ],
)
def test_prediction_matches_the_measured_table(
    bs: int, w: int, stride: int, max_len: int, block_m: int, unwritten: int
) -> None:
    assert len(_predict(bs, w, stride, max_len, block_m).unwritten) == unwritten


def test_prediction_details_for_the_motivating_bug() -> None:
    rows = _predict(2, 8, 4, 4, 128)
    assert rows.unwritten == tuple(range(8, 16))
    # Rows 4..7 belong to request 0 but request 1's program (which starts at 4) computes them.
    assert rows.wrong == (4, 5, 6, 7)
    assert rows.computed_as[4] == (1, 0)
    assert rows.stray_rows == 0


def test_padded_requests_write_into_real_rows() -> None:
    # Captured at 4, replayed at 2: the padded requests' programs cover rows 8..15.
    rows = _predict(2, 8, 4, 4, 128, capture_bs=4)
    assert rows.unwritten == ()
    assert rows.wrong == tuple(range(4, 16))


def test_stride_past_the_width_writes_out_of_the_buffer() -> None:
    rows = _predict(1, 3, 4, 4, 128)
    assert rows.wrong == () and rows.unwritten == ()
    assert rows.stray_rows == 1


def test_prediction_rejects_a_short_indptr() -> None:
    with pytest.raises(ValueError):
        predict_rows(bs=2, capture_bs=2, tokens_per_req=4, qo_indptr=[0, 4], max_len=4, block_m=16)
