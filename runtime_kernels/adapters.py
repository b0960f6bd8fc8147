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

``idxcheck``
    Our own convention, ``fn(q, k, v, o, k_pool, v_pool, qo_indptr, kv_indptr, kv_indices,
    max_len_extend, *, block_m, sm_scale)`` (see ``extend_attention.extend_attention_fwd``). Use it
    to wrap any other kernel in a few lines: the replay's BLOCK_M is passed in.

All tensors are ``[tokens, heads, dim]`` (pools ``[slots, kv_heads, dim]``), contiguous in the
last dimension, on the replay's device; index tensors are int32.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class KernelArgs:
    """The buffers and scalars of one launch, as the replay prepared them at capture.

    ``block_m`` is the replay's choice (the finding's, else the device default); ``interpret``
    tells an adapter that the launch runs under the Triton interpreter (CPU tensors).
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
        kwargs: dict[str, Any] = {}
        for pname, param in self._params.items():
            if pname in by_name:
                kwargs[pname] = by_name[pname]
            elif param.default is inspect.Parameter.empty and param.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                raise TypeError(
                    f"{self.name}: required parameter {pname!r} has no SGLang-convention mapping"
                )
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


CONVENTIONS = ("sglang", "idxcheck")


def detect_convention(fn: Callable[..., Any]) -> str:
    """Guess the convention from parameter names; raise when neither fits."""
    params = inspect.signature(fn).parameters
    if "q_extend" in params and "max_len_extend" in params:
        return "sglang"
    if "block_m" in params:
        return "idxcheck"
    raise TypeError(
        f"cannot tell the calling convention of {getattr(fn, '__qualname__', fn)!r}: expected "
        "SGLang's extend_attention_fwd parameters (q_extend, ..., max_len_extend) or ours "
        "(..., max_len_extend, *, block_m, sm_scale); name one with kernel_adapter="
    )


def load_user_kernel(spec: str, *, interpret: bool, convention: str | None = None) -> KernelAdapter:
    """Import ``module:function`` (only now, only because the user asked) and wrap it.

    ``interpret`` says whether the replay runs under the Triton interpreter; the caller has already
    put this process's triton in that mode (``_jit.ensure_mode``), and a module whose kernels are
    of the other mode is refused (``_jit.import_user_module``).
    """
    from ._jit import import_user_module

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--kernel wants module:function, got {spec!r}")
    module: ModuleType = import_user_module(module_name, interpret=interpret)
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
    raise ValueError(f"unknown kernel convention {conv!r}; known: {', '.join(CONVENTIONS)}")
