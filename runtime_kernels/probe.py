"""The coverage probe: the extend kernel's grid and indexing, with the attention taken out.

Each program of the probe does exactly what a program of the attention kernel does to decide
*which rows it owns* (same grid, same ``qo_indptr`` reads, same masking by the request's length)
and then, instead of attention, writes into a map, for every row it owns and every head, the
(request, position) it computed that row as. Rows nobody owns keep the poison value. Comparing
the map with the layout the runtime really has (``W`` tokens per request: row ``r`` is request
``r // W``, position ``r % W``) gives an exact list of rows never written and rows computed as the
wrong (request, position), at a fraction of the attention's cost (one store per program).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

from .extend_attention import Launch
from .layout import RowMap

if TYPE_CHECKING:
    import torch

POISON = -1  # int32 map entries nobody wrote


@triton.jit  # type: ignore[untyped-decorator]
def _probe_kernel(  # type: ignore[no-untyped-def]
    qo_indptr,
    Map,
    stride_mt,
    stride_mh,
    BLOCK_M: tl.constexpr,
    TILE_M: tl.constexpr,
):
    req = tl.program_id(0)
    head = tl.program_id(1)
    m_block = tl.program_id(2)
    q_start = tl.load(qo_indptr + req)
    q_len = tl.load(qo_indptr + req + 1) - q_start
    lane = tl.arange(0, TILE_M)  # TILE_M: BLOCK_M rounded up to a power of two (tl.arange)
    offs_m = m_block * BLOCK_M + lane
    m_mask = (lane < BLOCK_M) & (offs_m < q_len)
    base = Map + (q_start + offs_m) * stride_mt + head * stride_mh
    tl.store(base, tl.zeros([TILE_M], tl.int32) + req, mask=m_mask)
    tl.store(base + 1, offs_m.to(tl.int32), mask=m_mask)


def prepare_probe(
    qo_indptr: torch.Tensor,
    row_map: torch.Tensor,
    max_len_extend: int,
    *,
    num_heads: int,
    block_m: int,
) -> Launch:
    """The probe's launch for a ``[rows, heads, 2]`` int32 map (grid frozen, as at capture)."""
    if block_m < 1:
        raise ValueError(f"BLOCK_M must be >= 1, got {block_m}")
    if row_map.shape[1] != num_heads or row_map.shape[2] != 2 or row_map.stride(2) != 1:
        raise ValueError("row_map must be [rows, num_heads, 2] and contiguous in the last dim")
    batch = qo_indptr.shape[0] - 1
    grid = (batch, num_heads, triton.cdiv(max(max_len_extend, 0), block_m))
    return Launch(
        kernel=_probe_kernel,
        grid=grid,
        args=(qo_indptr, row_map, row_map.stride(0), row_map.stride(1)),
        constexprs=(
            ("BLOCK_M", block_m),
            ("TILE_M", triton.next_power_of_2(block_m)),
            ("num_warps", 1),
        ),
    )


@dataclass(frozen=True)
class ProbeMap:
    """What the probe recorded, judged against the runtime layout.

    ``rows`` is the per-row verdict for the real requests' rows (see ``layout.RowMap``: a row is
    ``None`` when any head left it unwritten). ``heads_disagree`` counts rows whose heads recorded
    different (request, position) pairs, which the contract never produces. ``stray_rows`` counts
    rows written in the guard region past the capture-size layout buffer.
    """

    rows: RowMap
    heads_disagree: int

    @property
    def unwritten(self) -> tuple[int, ...]:
        return self.rows.unwritten

    @property
    def wrong(self) -> tuple[int, ...]:
        return self.rows.wrong

    @property
    def stray_rows(self) -> int:
        return self.rows.stray_rows


def read_probe_map(
    row_map_full: torch.Tensor,
    *,
    guard_before: int,
    real_rows: int,
    buffer_rows: int,
    tokens_per_req: int,
) -> ProbeMap:
    """Turn the probe's map (with its guard rows) into a :class:`ProbeMap`."""
    m = row_map_full.cpu()
    body = m[guard_before : guard_before + real_rows]
    written = (body != POISON).all(dim=2).all(dim=1)
    first = body[:, 0, :]
    disagree = (body != first[:, None, :]).any(dim=2).any(dim=1) & written
    written_l, first_l = written.tolist(), first.tolist()
    computed: list[tuple[int, int] | None] = [
        (first_l[r][0], first_l[r][1]) if written_l[r] else None for r in range(real_rows)
    ]
    guard_rows = list(range(guard_before)) + list(range(guard_before + buffer_rows, m.shape[0]))
    stray = int((m[guard_rows] != POISON).any(dim=2).any(dim=1).sum()) if guard_rows else 0
    return ProbeMap(
        rows=RowMap(tokens_per_req=tokens_per_req, computed_as=tuple(computed), stray_rows=stray),
        heads_disagree=int(disagree.sum()),
    )
