"""Our own Triton extend-attention kernel, with the indexing contract of SGLang's extend kernel.

Written for idxcheck from the contract alone (see ``layout.py``); it is deliberately simple (an
online-softmax loop, no custom mask, no sliding window, no logit cap) because what a replay judges
is *which rows get computed from which tokens*, and that is fixed by the indexing:

* ``q``/``k``/``v`` of the extend part are ``[tokens, heads, dim]``, request ``i`` owning rows
  ``qo_indptr[i] .. qo_indptr[i + 1] - 1`` (``qo_indptr`` is read from device memory, so a CUDA
  graph replays whatever the buffer holds at replay time);
* the prefix K/V is gathered from a paged pool (page size 1) through ``kv_indptr``/``kv_indices``,
  which cover the prefix only (the extend K/V are passed separately, as in SGLang);
* attention is causal within the extend part and sees the whole prefix;
* ``grid = (batch, heads, cdiv(max_len_extend, BLOCK_M))`` with ``batch = len(qo_indptr) - 1``;
  program ``(i, h, m)`` computes the ``BLOCK_M`` rows of request ``i`` at positions
  ``m * BLOCK_M ..``, masking positions at or past the request's length. Positions past
  ``cdiv(max_len_extend, BLOCK_M) * BLOCK_M`` are therefore never computed;
* GQA: query head ``h`` reads KV head ``h // (heads // kv_heads)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

if TYPE_CHECKING:
    import torch


@triton.jit  # type: ignore[untyped-decorator]
def _extend_attention_kernel(  # type: ignore[no-untyped-def]
    Q,
    K,
    V,
    Out,
    K_pool,
    V_pool,
    qo_indptr,
    kv_indptr,
    kv_indices,
    sm_scale,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    stride_vt,
    stride_vh,
    stride_ot,
    stride_oh,
    stride_kpt,
    stride_kph,
    stride_vpt,
    stride_vph,
    KV_GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    V_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    TILE_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    IEEE_DOT: tl.constexpr,
):
    req = tl.program_id(0)
    head = tl.program_id(1)
    m_block = tl.program_id(2)
    kv_head = head // KV_GROUP

    # The request's slice of the flattened extend tokens, read from memory at run time: under a
    # CUDA graph this is the only place a refilled qo_indptr can change what the kernel does.
    q_start = tl.load(qo_indptr + req)
    q_len = tl.load(qo_indptr + req + 1) - q_start
    kv_start = tl.load(kv_indptr + req)
    prefix_len = tl.load(kv_indptr + req + 1) - kv_start

    # A program owns BLOCK_M positions; it computes them in a TILE_M >= 16 tile (tl.dot's minimum,
    # and a power of two for tl.arange), the surplus lanes masked off.
    lane = tl.arange(0, TILE_M)
    offs_m = m_block * BLOCK_M + lane
    m_mask = (lane < BLOCK_M) & (offs_m < q_len)
    rows = q_start + offs_m
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    dv_mask = offs_dv < V_DIM

    m_i = tl.full([TILE_M], float("-inf"), tl.float32)
    l_i = tl.zeros([TILE_M], tl.float32)
    acc = tl.zeros([TILE_M, BLOCK_DV], tl.float32)

    # Phase 1: the prefix, gathered page by page (page size 1) through kv_indices.
    # `while` rather than `for n0 in range(0, prefix_len, BLOCK_N)`: Triton < 3.7's interpreter
    # turns a loaded scalar into a 1-element array whose __index__ NumPy >= 2.4 rejects.
    n0 = q_start * 0
    while n0 < prefix_len:
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < prefix_len
        slots = tl.load(kv_indices + kv_start + offs_n, mask=n_mask, other=0)
        qk = tl.zeros([TILE_M, BLOCK_N], tl.float32)
        # Head dims such as 576 (MLA) are not powers of two: accumulate q.k over BLOCK_D chunks.
        for d0 in tl.static_range(0, HEAD_DIM, BLOCK_D):
            d = d0 + offs_d
            d_mask = d < HEAD_DIM
            q = tl.load(
                Q + rows[:, None] * stride_qt + head * stride_qh + d[None, :],
                mask=m_mask[:, None] & d_mask[None, :],
                other=0.0,
            )
            kt = tl.load(
                K_pool + slots[None, :] * stride_kpt + kv_head * stride_kph + d[:, None],
                mask=n_mask[None, :] & d_mask[:, None],
                other=0.0,
            )
            if IEEE_DOT:
                qk += tl.dot(q, kt, input_precision="ieee")
            else:
                qk += tl.dot(q, kt)
        qk = tl.where(n_mask[None, :], qk * sm_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        # A row that has seen no key yet keeps m = -inf; shift by 0 there to avoid inf - inf.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(qk - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        v = tl.load(
            V_pool + slots[:, None] * stride_vpt + kv_head * stride_vph + offs_dv[None, :],
            mask=n_mask[:, None] & dv_mask[None, :],
            other=0.0,
        )
        if IEEE_DOT:
            pv = tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        n0 += BLOCK_N

    # Phase 2: the extend part itself, causal. Keys past this block's last row are never needed.
    ext_end = tl.minimum(q_len, (m_block + 1) * BLOCK_M)
    n0 = q_start * 0
    while n0 < ext_end:
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < q_len
        keys = q_start + offs_n
        qk = tl.zeros([TILE_M, BLOCK_N], tl.float32)
        for d0 in tl.static_range(0, HEAD_DIM, BLOCK_D):
            d = d0 + offs_d
            d_mask = d < HEAD_DIM
            q = tl.load(
                Q + rows[:, None] * stride_qt + head * stride_qh + d[None, :],
                mask=m_mask[:, None] & d_mask[None, :],
                other=0.0,
            )
            kt = tl.load(
                K + keys[None, :] * stride_kt + kv_head * stride_kh + d[:, None],
                mask=n_mask[None, :] & d_mask[:, None],
                other=0.0,
            )
            if IEEE_DOT:
                qk += tl.dot(q, kt, input_precision="ieee")
            else:
                qk += tl.dot(q, kt)
        visible = n_mask[None, :] & (offs_n[None, :] <= offs_m[:, None])
        qk = tl.where(visible, qk * sm_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(qk - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        v = tl.load(
            V + keys[:, None] * stride_vt + kv_head * stride_vh + offs_dv[None, :],
            mask=n_mask[:, None] & dv_mask[None, :],
            other=0.0,
        )
        if IEEE_DOT:
            pv = tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            pv = tl.dot(p.to(v.dtype), v)
        acc = acc * alpha[:, None] + pv
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        n0 += BLOCK_N

    # Rows past the request's length are masked here: they belong to another request (or to
    # nobody) and must keep whatever they held, exactly as in the real kernel.
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(
        Out + rows[:, None] * stride_ot + head * stride_oh + offs_dv[None, :],
        out.to(Out.dtype.element_ty),
        mask=m_mask[:, None] & dv_mask[None, :],
    )


@dataclass(frozen=True)
class Launch:
    """One kernel launch with its grid and every scalar already decided.

    This is what a CUDA graph freezes at capture: the CPU replay "captures" by building a Launch
    once and "replays" by running it again after the buffers were refilled in place.
    """

    kernel: Any
    grid: tuple[int, int, int]
    args: tuple[Any, ...]
    constexprs: tuple[tuple[str, Any], ...]

    def run(self) -> None:
        if self.grid[2] == 0:
            return  # cdiv(0, BLOCK_M) = 0: the real launcher enqueues nothing either
        self.kernel[self.grid](*self.args, **dict(self.constexprs))


def block_sizes(head_dim: int, v_head_dim: int) -> tuple[int, int, int]:
    """(BLOCK_N, BLOCK_D, BLOCK_DV) for our kernel; BLOCK_M is the caller's (the contract's)."""
    block_d = triton.next_power_of_2(head_dim) if head_dim <= 256 else 64
    block_d = max(block_d, 16)  # tl.dot needs K >= 16
    block_dv = max(triton.next_power_of_2(v_head_dim), 16)
    block_n = 64 if max(head_dim, v_head_dim) <= 128 else 32
    return block_n, block_d, block_dv


def prepare_extend_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    k_pool: torch.Tensor,
    v_pool: torch.Tensor,
    qo_indptr: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    max_len_extend: int,
    *,
    block_m: int,
    sm_scale: float | None = None,
) -> Launch:
    """Decide the grid and arguments of one launch (what capture freezes) without running it."""
    import torch

    if block_m < 1:
        raise ValueError(f"BLOCK_M must be >= 1, got {block_m}")
    _, heads, head_dim = q.shape
    kv_heads = k.shape[1]
    v_head_dim = v.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads are not a multiple of {kv_heads} KV heads")
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("k_pool", k_pool), ("v_pool", v_pool)):
        if t.stride(2) != 1:
            raise ValueError(f"{name} must be contiguous in its last dimension")
    block_n, block_d, block_dv = block_sizes(head_dim, v_head_dim)
    batch = qo_indptr.shape[0] - 1
    grid = (batch, heads, triton.cdiv(max(max_len_extend, 0), block_m))
    args = (
        q,
        k,
        v,
        o,
        k_pool,
        v_pool,
        qo_indptr,
        kv_indptr,
        kv_indices,
        float(sm_scale if sm_scale is not None else head_dim**-0.5),
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        v.stride(0),
        v.stride(1),
        o.stride(0),
        o.stride(1),
        k_pool.stride(0),
        k_pool.stride(1),
        v_pool.stride(0),
        v_pool.stride(1),
    )
    constexprs = (
        ("KV_GROUP", heads // kv_heads),
        ("HEAD_DIM", head_dim),
        ("V_DIM", v_head_dim),
        ("BLOCK_M", block_m),
        ("TILE_M", max(16, triton.next_power_of_2(block_m))),
        ("BLOCK_N", block_n),
        ("BLOCK_D", block_d),
        ("BLOCK_DV", block_dv),
        # fp32 on a GPU would silently use TF32 in tl.dot; ask for IEEE so fp32 means fp32.
        ("IEEE_DOT", q.dtype == torch.float32),
        ("num_warps", 4 if max(head_dim, v_head_dim) <= 64 else 8),
        ("num_stages", 1),
    )
    return Launch(kernel=_extend_attention_kernel, grid=grid, args=args, constexprs=constexprs)


def extend_attention_fwd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    k_pool: torch.Tensor,
    v_pool: torch.Tensor,
    qo_indptr: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    max_len_extend: int,
    *,
    block_m: int,
    sm_scale: float | None = None,
) -> None:
    """Run the kernel once on CUDA tensors, or on CPU tensors when this process's triton was
    imported with ``TRITON_INTERPRET=1`` (see ``_jit.py``).

    Argument order follows SGLang's ``extend_attention_fwd`` minus the mask/scale arguments we do
    not model; ``block_m`` is explicit because a replay must choose it.
    """
    prepare_extend_attention(
        q,
        k,
        v,
        o,
        k_pool,
        v_pool,
        qo_indptr,
        kv_indptr,
        kv_indices,
        max_len_extend,
        block_m=block_m,
        sm_scale=sm_scale,
    ).run()
