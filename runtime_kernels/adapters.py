"""Kernel adapters: how a replay calls an attention kernel, ours or the user's.

A replay owns the buffers (guarded, poisoned, refilled in place) and decides the metadata; an
adapter only maps those buffers onto one kernel's calling convention. It is asked once, at
"capture", for a zero-argument callable that launches the kernel; under a CUDA graph that call is
captured, on the CPU it is replayed as is. Anything the kernel computes on the host from Python
scalars or tensor shapes (its grid, its block sizes) is therefore fixed at capture, as in a real
graph.

Conventions understood for ``--kernel module:function``:

``sglang``
    SGLang's ``extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer,
    qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend,
    [k_scale, v_scale,] sm_scale=None, ...)`` (``sglang.srt.layers.attention.triton_ops.
    extend_attention``). Arguments are passed by name, so releases with or without
    ``k_scale``/``v_scale`` both work. We pass ``custom_mask=None``, ``is_causal=True``,
    ``mask_indptr=None``, scales 1.0, and ``qo_indptr``/``kv_indptr`` of exactly
    ``capture_bs + 1`` entries (the kernel takes its batch size from ``len(qo_indptr) - 1``).
    The kernel picks BLOCK_M itself; we read it from the module's
    ``_get_block_sizes_for_extend_attention(Lq, Lv)`` when that helper exists.

``vllm``
    vLLM's Triton ``unified_attention(q, k, v, out, cu_seqlens_q, max_seqlen_q, seqused_k,
    max_seqlen_k, softmax_scale, causal, window_size, block_table, softcap, q_descale, k_descale,
    v_descale, ...)`` (``vllm/v1/attention/ops/triton_unified_attention.py``; see
    :class:`VllmConvention`). Its KV lives in a paged cache that the runner writes, so the launch
    first writes the cache from the replay's buffers (as vLLM's ``reshape_and_cache`` does before
    attention, in the same graph), then runs the kernel with ``cu_seqlens_q`` = the backend's
    ``qo_indptr``.

``idxcheck``
    Our own convention, ``fn(q, k, v, o, k_pool, v_pool, qo_indptr, kv_indptr, kv_indices,
    max_len_extend, *, block_m, sm_scale)`` (see ``extend_attention.extend_attention_fwd``). Use it
    to wrap any other kernel in a few lines: the replay's BLOCK_M is passed in.

All tensors are ``[tokens, heads, dim]`` (pools ``[slots, kv_heads, dim]``), contiguous in the
last dimension, on the replay's device; index tensors are int32.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class KernelArgs:
    """The buffers and scalars of one launch, as the replay prepared them at capture.

    ``block_m`` is the replay's choice (the finding's, else the device default); ``interpret``
    tells an adapter that the launch runs under the Triton interpreter (CPU tensors).
    ``tokens_per_req`` is the runner's layout (W tokens per request in ``q``/``k``/``v``), which
    an adapter needs only where the runner, not the backend's metadata, decides where a token's
    KV goes (vLLM's paged cache).
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor
    k_pool: torch.Tensor
    v_pool: torch.Tensor
    qo_indptr: torch.Tensor
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor
    max_len: int
    sm_scale: float
    block_m: int
    interpret: bool
    tokens_per_req: int


class KernelAdapter(Protocol):
    """Maps a replay onto one kernel."""

    @property
    def name(self) -> str: ...

    def block_m(self, head_dim: int, v_head_dim: int, wanted: int) -> int | None:
        """The BLOCK_M the kernel will use, ``wanted`` if it can be told, None if unknown."""
        ...

    def prepare(self, args: KernelArgs) -> Callable[[], None]:
        """Called once at capture; returns the launch to capture (GPU) or re-run (CPU)."""
        ...


def follows_extend_contract(adapter: KernelAdapter) -> bool:
    """Whether the coverage probe (``probe.py``: rows from ``qo_indptr``, grid
    ``cdiv(max_len, BLOCK_M)``, position p of a request sees its tokens 0..p) models this kernel.
    An adapter says no with a class attribute ``extend_contract = False``; the replay then runs no
    probe, whose map would describe another kernel."""
    return bool(getattr(adapter, "extend_contract", True))


class IdxcheckKernel:
    """Our own kernel (``extend_attention.py``): BLOCK_M is whatever the replay asks for."""

    name = "idxcheck.runtime_kernels.extend_attention"

    def block_m(self, head_dim: int, v_head_dim: int, wanted: int) -> int | None:
        return wanted

    def prepare(self, args: KernelArgs) -> Callable[[], None]:
        from .extend_attention import prepare_extend_attention

        launch = prepare_extend_attention(
            args.q,
            args.k,
            args.v,
            args.o,
            args.k_pool,
            args.v_pool,
            args.qo_indptr,
            args.kv_indptr,
            args.kv_indices,
            args.max_len,
            block_m=args.block_m,
            sm_scale=args.sm_scale,
        )
        return launch.run


class SglangConvention:
    """A function with SGLang's ``extend_attention_fwd`` parameters (mapped by name)."""

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        self._fn = fn
        self.name = label
        self._params = inspect.signature(fn).parameters

    def block_m(self, head_dim: int, v_head_dim: int, wanted: int) -> int | None:
        module = inspect.getmodule(self._fn)
        helper = getattr(module, "_get_block_sizes_for_extend_attention", None)
        if helper is None:
            return None
        try:
            sizes = helper(head_dim, v_head_dim)
        except Exception:  # a helper of another shape: say "unknown" rather than guess
            return None
        # 0.5.x returns (BLOCK_DMODEL, BLOCK_DPE, BLOCK_DV, BLOCK_M, BLOCK_N, num_warps).
        if isinstance(sizes, tuple) and len(sizes) >= 4 and isinstance(sizes[3], int):
            return sizes[3]
        return None

    def prepare(self, args: KernelArgs) -> Callable[[], None]:
        by_name: dict[str, Any] = {
            "q_extend": args.q,
            "k_extend": args.k,
            "v_extend": args.v,
            "o_extend": args.o,
            "k_buffer": args.k_pool,
            "v_buffer": args.v_pool,
            "qo_indptr": args.qo_indptr,
            "kv_indptr": args.kv_indptr,
            "kv_indices": args.kv_indices,
            "custom_mask": None,
            "is_causal": True,
            "mask_indptr": None,
            "max_len_extend": args.max_len,
            "k_scale": 1.0,
            "v_scale": 1.0,
            "sm_scale": args.sm_scale,
        }
        kwargs = _by_name(self._params, by_name, self.name, "SGLang")
        fn = self._fn
        return lambda: fn(**kwargs)


class IdxcheckConvention:
    """A user function with our convention (``block_m`` passed by keyword)."""

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        self._fn = fn
        self.name = label

    def block_m(self, head_dim: int, v_head_dim: int, wanted: int) -> int | None:
        return wanted

    def prepare(self, args: KernelArgs) -> Callable[[], None]:
        fn = self._fn

        def launch() -> None:
            fn(
                args.q,
                args.k,
                args.v,
                args.o,
                args.k_pool,
                args.v_pool,
                args.qo_indptr,
                args.kv_indptr,
                args.kv_indices,
                args.max_len,
                block_m=args.block_m,
                sm_scale=args.sm_scale,
            )

        return launch


# vLLM's paged KV cache: tokens per block (vLLM's default for its Triton backend).
VLLM_BLOCK_SIZE = 16


class VllmConvention:
    """A function with vLLM's ``unified_attention`` parameters (mapped by name).

    What the launch does, step by step, and which of vLLM's pieces each step stands for:

    1. The runner's KV write (``reshape_and_cache_flash`` with the runner's ``slot_mapping``):
       request ``i``'s prefix (the replay's pool slots ``kv_indices[kv_indptr[i]:...]``) then its
       ``W`` new tokens (rows ``i * W ..`` of ``k``/``v``: the runner's layout, whatever the
       backend's ``qo_indptr`` says) are written into a paged cache of ``VLLM_BLOCK_SIZE``-token
       blocks, each request owning ``cdiv(pool + W, VLLM_BLOCK_SIZE)`` blocks, numbered in
       reverse so that a block-table mix-up would read another request's keys.
    2. ``seqused_k`` = prefix + ``W`` (the runner's ``seq_lens``).
    3. ``unified_attention`` with ``cu_seqlens_q`` = the backend's ``qo_indptr``, ``max_seqlen_q``
       = the finding's ``max_len``, ``causal=True``, no window, no softcap, no FP8 scales, and no
       split-softmax buffers (its 2D kernel; vLLM takes the 3D one only for some decode batches,
       with the same row indexing).

    All of it is tensor work on the device, so it is captured in the CUDA graph and re-run on
    each replay after the refill. The kernel's causal mask aligns a request's queries with the
    end of its sequence (query ``p`` of ``n`` sees keys up to ``seqused_k - n + p``), not with
    ``qo_indptr`` positions as the extend kernel does, so the coverage probe does not model it
    (``extend_contract``). Its BLOCK_M tiles query heads, not the extend grid: not reported.
    The value head dim must equal the query's (the kernel has one ``HEAD_SIZE``).
    """

    extend_contract = False

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        self._fn = fn
        self.name = label
        self._params = inspect.signature(fn).parameters

    def block_m(self, head_dim: int, v_head_dim: int, wanted: int) -> int | None:
        return None

    def prepare(self, args: KernelArgs) -> Callable[[], None]:
        import torch

        if args.v.shape[-1] != args.q.shape[-1]:
            raise ValueError(
                f"{self.name}: vLLM's unified_attention has one head size; the replay's value "
                f"head dim {args.v.shape[-1]} differs from the query's {args.q.shape[-1]}"
            )
        dev, w = args.q.device, args.tokens_per_req
        batch = args.qo_indptr.numel() - 1
        pool_rows = args.k_pool.shape[0]
        bsz = VLLM_BLOCK_SIZE
        # A request's sequence is at most every pool slot plus its W new tokens.
        longest = pool_rows + w
        per_req = -(-longest // bsz)
        blocks = batch * per_req
        kvh, d = args.k.shape[1], args.k.shape[2]
        key_cache = torch.zeros(blocks, bsz, kvh, d, dtype=args.k.dtype, device=dev)
        value_cache = torch.zeros_like(key_cache)
        block_ids = torch.arange(blocks - 1, -1, -1, dtype=torch.int32, device=dev)
        block_table = block_ids.view(batch, per_req).contiguous()
        seqused_k = torch.zeros(batch, dtype=torch.int32, device=dev)
        pos = torch.arange(per_req * bsz, device=dev)[None, :]
        first_row = (torch.arange(batch, device=dev) * w)[:, None]
        last_index = args.kv_indices.numel() - 1
        zero = torch.zeros(1, kvh, d, dtype=args.k.dtype, device=dev)
        blank = pool_rows + args.k.shape[0]  # the index of `zero` in the stacked sources

        def write_cache() -> None:
            start = args.kv_indptr[:-1].long()[:, None]
            prefix = args.kv_indptr[1:].long()[:, None] - start
            slot = args.kv_indices[(start + pos).clamp(max=last_index)].long()
            new = pool_rows + first_row + (pos - prefix).clamp(0, w - 1)
            src = torch.where(pos < prefix, slot, new)
            src = torch.where(pos < prefix + w, src, blank).flatten()
            flat_ids = block_table.flatten().long()
            for cache, pool, fresh in (
                (key_cache, args.k_pool, args.k),
                (value_cache, args.v_pool, args.v),
            ):
                rows = torch.cat([pool, fresh, zero])[src]
                cache.index_copy_(0, flat_ids, rows.view(blocks, bsz, kvh, d))
            seqused_k.copy_((prefix + w).flatten())

        by_name: dict[str, Any] = {
            "q": args.q,
            "k": key_cache,
            "v": value_cache,
            "out": args.o,
            "cu_seqlens_q": args.qo_indptr,
            "max_seqlen_q": args.max_len,
            "seqused_k": seqused_k,
            "max_seqlen_k": longest,
            "softmax_scale": args.sm_scale,
            "causal": True,
            "window_size": (-1, -1),
            "block_table": block_table,
            "softcap": 0.0,
            "q_descale": None,
            "k_descale": None,
            "v_descale": None,
        }
        kwargs = _by_name(self._params, by_name, self.name, "vLLM")
        fn = self._fn

        def launch() -> None:
            write_cache()
            fn(**kwargs)

        return launch


def _by_name(
    params: Mapping[str, inspect.Parameter], values: dict[str, Any], label: str, convention: str
) -> dict[str, Any]:
    """The keyword arguments of a call in a named convention: every parameter ``values`` maps,
    and an error for a required one it does not."""
    kwargs: dict[str, Any] = {}
    for pname, param in params.items():
        if pname in values:
            kwargs[pname] = values[pname]
        elif param.default is inspect.Parameter.empty and param.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise TypeError(
                f"{label}: required parameter {pname!r} has no {convention}-convention mapping"
            )
    return kwargs


CONVENTIONS = ("sglang", "idxcheck", "vllm")


def detect_convention(fn: Callable[..., Any]) -> str:
    """Guess the convention from parameter names; raise when neither fits."""
    params = inspect.signature(fn).parameters
    if "q_extend" in params and "max_len_extend" in params:
        return "sglang"
    if {"cu_seqlens_q", "seqused_k", "block_table"} <= params.keys():
        return "vllm"
    if "block_m" in params:
        return "idxcheck"
    raise TypeError(
        f"cannot tell the calling convention of {getattr(fn, '__qualname__', fn)!r}: expected "
        "SGLang's extend_attention_fwd parameters (q_extend, ..., max_len_extend), vLLM's "
        "unified_attention ones (..., cu_seqlens_q, ..., seqused_k, ..., block_table, ...) or "
        "ours (..., max_len_extend, *, block_m, sm_scale); name one with kernel_adapter="
    )


def load_user_kernel(spec: str, *, interpret: bool, convention: str | None = None) -> KernelAdapter:
    """Import ``module:function`` or ``path/to/file.py:function`` (only now, only because the
    user asked) and wrap it.

    A file of a vLLM source tree (``.../vllm/v1/attention/ops/triton_unified_attention.py``) is
    imported with stand-ins for the parts of vLLM it needs (``vllm_standin.py``), so vLLM's own
    kernel runs from a downloaded tree without installing vLLM.

    ``interpret`` says whether the replay runs under the Triton interpreter; the caller has already
    put this process's triton in that mode (``_jit.ensure_mode``), and a module whose kernels are
    of the other mode is refused (``_jit.import_user_module``).
    """
    from ._jit import import_user_file, import_user_module

    # The last colon: a file path may hold one, a function name never does.
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--kernel wants module:function or file.py:function, got {spec!r}")
    module: ModuleType
    if module_name.endswith(".py"):
        module = import_user_file(Path(module_name), interpret=interpret)
    else:
        module = import_user_module(module_name, interpret=interpret)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec} is not callable")
    conv = convention or detect_convention(obj)
    if conv == "sglang":
        return SglangConvention(obj, spec)
    if conv == "idxcheck":
        return IdxcheckConvention(obj, spec)
    if conv == "vllm":
        return VllmConvention(obj, spec)
    raise ValueError(f"unknown kernel convention {conv!r}; known: {', '.join(CONVENTIONS)}")
