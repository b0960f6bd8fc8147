"""The indexing contract of an extend-attention kernel, as plain Python.

Nothing here imports torch or triton: `confirm` uses it to explain a result (and to say why a
finding is latent) even when the runtime extra is not installed, and the tests use it as an
independent oracle for what the probe kernel must record.

The contract (SGLang's Triton extend kernel and ours share it):

* query tokens of all requests are flattened; request ``i`` owns rows
  ``qo_indptr[i] .. qo_indptr[i + 1] - 1``;
* the kernel is launched with ``grid = (batch, heads, cdiv(max_len, BLOCK_M))``; program
  ``(i, h, m)`` handles rows ``qo_indptr[i] + m * BLOCK_M + j`` for ``j < BLOCK_M`` whose
  position ``m * BLOCK_M + j`` is below the request's length ``qo_indptr[i + 1] - qo_indptr[i]``;
* so a request's positions at or past ``cdiv(max_len, BLOCK_M) * BLOCK_M`` are never computed,
  and a row is computed as (request, position) = (i, p) when ``qo_indptr[i] + p`` is that row.

The runtime (the CUDA-graph runner) lays out ``W`` query tokens per request: row ``r`` truly
belongs to request ``r // W`` at position ``r % W``.

vLLM's ``unified_attention`` follows another contract (every query row computed, queries aligned
with the end of the sequence): :func:`predict_rows_end_aligned`.
"""

from __future__ import annotations

from dataclasses import dataclass


def cdiv(a: int, b: int) -> int:
    """Ceiling division for non-negative ``a`` and positive ``b`` (``triton.cdiv``)."""
    return -(-a // b)


def grid_rows(max_len: int, block_m: int) -> int:
    """How many positions per request the grid can reach: ``cdiv(max_len, BLOCK_M) * BLOCK_M``."""
    return cdiv(max(max_len, 0), block_m) * block_m


def uniform_indptr(n_req: int, stride: int) -> list[int]:
    """``torch.arange(0, (n_req + 1) * stride, step=stride)``: the backends' uniform indptr."""
    return [i * stride for i in range(n_req + 1)]


# BLOCK_M of the real kernel (SGLang 0.5.13 `triton_ops/extend_attention.py`,
# `_get_block_sizes_for_extend_attention`), keyed by compute-capability major. Each row lists
# (largest head dim, BLOCK_M) thresholds; the last entry covers everything above. DOMAIN.md
# summarises Hopper as "128 up to 256, 32 above"; the release actually uses 64 for head dims
# 129..256, and we follow the code, not the summary.
_BLOCK_M_TABLE: dict[int, tuple[tuple[int, int], ...]] = {
    12: ((128, 64), (256, 64), (1 << 30, 32)),  # sm120 (workstation Blackwell, small smem)
    10: ((256, 64), (1 << 30, 16)),  # sm100 (B200/GB200)
    9: ((128, 128), (256, 64), (1 << 30, 32)),  # sm90 (H100/H200)
    8: ((128, 128), (256, 64), (1 << 30, 32)),  # sm80 (A100); sm86/sm89 below
}
_SM86_89: tuple[tuple[int, int], ...] = ((128, 64), (256, 64), (1 << 30, 32))
_OLDER: tuple[tuple[int, int], ...] = ((128, 64), (1 << 30, 32))

# With no GPU the replay emulates the device the bug was measured on (an H200, DOMAIN.md
# section 1): that makes a CPU run predict what Hopper shows, BLOCK_M 128 for the usual head dims.
CPU_EMULATED_CAPABILITY: tuple[int, int] = (9, 0)


def default_block_m(head_dim: int, capability: tuple[int, int] | None) -> int:
    """BLOCK_M the real SGLang extend kernel picks for ``head_dim`` on a device.

    ``capability`` is the CUDA compute capability (major, minor); ``None`` means "no GPU: the CPU
    interpreter", which emulates Hopper (sm90): 128 for head dim <= 128, 64 up to 256, 32 above.
    """
    major, minor = capability if capability is not None else CPU_EMULATED_CAPABILITY
    if major == 8 and minor in (6, 9):
        table = _SM86_89
    elif major in _BLOCK_M_TABLE:
        table = _BLOCK_M_TABLE[major]
    elif major >= 9:
        # The release tests `== 12`, `== 10`, then `>= 9`: any other part from sm90 up gets the
        # Hopper sizes.
        table = _BLOCK_M_TABLE[9]
    else:
        table = _OLDER
    for limit, block_m in table:
        if head_dim <= limit:
            return block_m
    return table[-1][1]  # pragma: no cover - the last limit is effectively infinite


@dataclass(frozen=True)
class RowMap:
    """What the contract predicts for the rows the runtime really holds.

    ``computed_as[r]`` is the (request, position) row ``r`` is computed as, or ``None`` when no
    program writes it. Only the first ``bs * W`` rows (the real requests) are listed; padded
    requests' rows are discarded by the runner and so are not judged. ``stray_rows`` counts rows
    written past the end of the capture-size layout buffer (out-of-bounds in a real run).
    """

    tokens_per_req: int
    computed_as: tuple[tuple[int, int] | None, ...]
    stray_rows: int

    @property
    def unwritten(self) -> tuple[int, ...]:
        return tuple(r for r, got in enumerate(self.computed_as) if got is None)

    @property
    def wrong(self) -> tuple[int, ...]:
        w = self.tokens_per_req
        return tuple(
            r
            for r, got in enumerate(self.computed_as)
            if got is not None and got != (r // w, r % w)
        )


def predict_rows(
    *,
    bs: int,
    capture_bs: int,
    tokens_per_req: int,
    qo_indptr: list[int],
    max_len: int,
    block_m: int,
) -> RowMap:
    """Predict, row by row, what a kernel with this contract computes after a graph replay.

    ``qo_indptr`` has ``capture_bs + 1`` entries (the graph was captured at ``capture_bs`` and the
    runner pads the batch up to it), ``max_len`` is the scalar frozen into the grid at capture.
    """
    if len(qo_indptr) != capture_bs + 1:
        raise ValueError(f"qo_indptr needs capture_bs + 1 = {capture_bs + 1} entries")
    reach = grid_rows(max_len, block_m)
    real_rows = bs * tokens_per_req
    buffer_rows = capture_bs * tokens_per_req
    computed: list[tuple[int, int] | None] = [None] * real_rows
    stray = 0
    for req in range(capture_bs):
        start, end = qo_indptr[req], qo_indptr[req + 1]
        for pos in range(min(end - start, reach)):
            row = start + pos
            if 0 <= row < real_rows:
                computed[row] = (req, pos)
            elif row >= buffer_rows or row < 0:
                stray += 1
    return RowMap(tokens_per_req=tokens_per_req, computed_as=tuple(computed), stray_rows=stray)


def predict_rows_end_aligned(
    *, bs: int, capture_bs: int, tokens_per_req: int, qo_indptr: list[int]
) -> RowMap:
    """Predict the rows of a kernel with vLLM's ``unified_attention`` contract after a replay.

    That kernel launches enough programs for every query token (its grid comes from the number of
    query rows, not from ``max_seqlen_q``), so request ``i`` writes all its rows ``qo_indptr[i] ..
    qo_indptr[i + 1] - 1``. It aligns a request's ``n`` queries with the end of its sequence: query
    ``p`` sees the keys up to ``seqused_k - n + p``, and ``seqused_k`` is the runner's (prefix +
    ``W``). So row ``qo_indptr[i] + p`` is computed as request ``i``, position ``W - n + p`` of its
    new tokens, with its own query row's data; it is right only when that is the row's place in
    the runner's layout.
    """
    if len(qo_indptr) != capture_bs + 1:
        raise ValueError(f"qo_indptr needs capture_bs + 1 = {capture_bs + 1} entries")
    w = tokens_per_req
    real_rows, buffer_rows = bs * w, capture_bs * w
    computed: list[tuple[int, int] | None] = [None] * real_rows
    stray = 0
    for req in range(capture_bs):
        start, end = qo_indptr[req], qo_indptr[req + 1]
        n = end - start
        for pos in range(max(n, 0)):
            row = start + pos
            if 0 <= row < real_rows:
                computed[row] = (req, w - n + pos)
            elif row >= buffer_rows or row < 0:
                stray += 1
    return RowMap(tokens_per_req=w, computed_as=tuple(computed), stray_rows=stray)
