"""The replay engine: capture at the padded batch size, refill in place, replay, compare.

What a CUDA-graph runner does, step by step, and what we do to mirror it:

1. It allocates its buffers once for the capture batch size (inputs for ``capture_bs * W`` tokens,
   metadata buffers ``qo_indptr``/``kv_indptr``/``kv_indices``). We do the same, and wrap every
   data buffer in guard rows filled with a poison bit pattern, so a stray read or write lands
   somewhere we can see (the Triton interpreter checks no bounds; on a GPU a read past the
   layout but inside an allocation is a legal access no sanitizer reports).
2. At capture the backend builds metadata from *its* formulas (the finding's ``qo_stride`` and
   ``max_len``) with dummy sequence lengths, and the kernel launch is captured: its grid
   ``(capture_bs, heads, cdiv(max_len, BLOCK_M))`` and every Python scalar are frozen. On a GPU we
   capture a real ``torch.cuda.CUDAGraph``; on the CPU we build the launch once (grid and scalars
   decided) and keep it, which is what a graph is.
3. Before each replay the backend refills the metadata buffers in place (we assert their data
   pointers did not move), the runner copies the real inputs (``W`` tokens per request for ``bs``
   requests, the rest padding up to ``capture_bs``) into the static input buffers, and the graph
   is replayed. We poison the output with a NaN bit pattern first, replay, synchronise.
4. We compare with a float64 reference computed from the layout the runner really has: a row
   that still holds the exact poison bits was never written; a written row whose error relative
   to the reference's scale exceeds the dtype's tolerance is wrong.

The probe kernel (``probe.py``) is captured into the same graph, so each replay also yields the
exact (request, position) every row was computed as.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .layout import default_block_m, grid_rows, uniform_indptr

if TYPE_CHECKING:
    import torch

    from .adapters import KernelAdapter
    from .probe import ProbeMap


# Poison bit patterns. Outputs (and their guards) get one NaN payload, input guards another:
# a row that still holds OUT_POISON bit for bit was never written; a row holding some other NaN
# was written from poisoned input memory (a stray read). Both are quiet NaNs in their format.
OUT_POISON = {"float32": 0x7FC0DEAD, "float16": 0x7E5A, "bfloat16": 0x7FDA}
IN_POISON = {"float32": 0x7FC0BEEF, "float16": 0x7E3B, "bfloat16": 0x7FCB}
# Relative error (max |out - ref| over a row / max |ref| over all real rows) above which a written
# row is wrong. Correct rows sit orders of magnitude below (fp32 ~1e-6, bf16 ~1e-2 at worst);
# a row computed from the wrong tokens differs by O(1).
TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 6e-2}
GUARD_ROWS = 16
# Padded requests of a captured batch get this prefix length, like the runners' fill value.
PAD_PREFIX_LEN = 1


@dataclass(frozen=True)
class ReplayCase:
    """One counterexample, concretely: what the backend builds vs what the runner lays out.

    ``qo_stride`` and ``max_len`` are the backend's (the metadata), ``tokens_per_req`` (W) the
    runner's (the layout). ``capture_bs`` (default ``bs``) is the batch size the graph was
    captured at; the runner pads ``bs`` up to it. ``block_m`` None means the real kernel's default
    for the device (``layout.default_block_m``). ``prefix_lens`` are per real request (default
    ``3 + 2 * i``: distinct so a row computed for the wrong request reads a different context).
    ``dtype`` None means float32 on the CPU (the interpreter's bf16 ``tl.dot`` is wrong) and
    bfloat16 on a GPU (what SGLang serves).
    """

    bs: int
    tokens_per_req: int
    qo_stride: int
    max_len: int
    capture_bs: int | None = None
    mode: str = "DRAFT_EXTEND_V2"
    block_m: int | None = None
    head_dim: int = 128
    v_head_dim: int | None = None
    num_heads: int = 4
    num_kv_heads: int = 2
    prefix_lens: tuple[int, ...] = ()
    dtype: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.bs < 1 or self.tokens_per_req < 1:
            raise ValueError("bs and tokens_per_req must be >= 1")
        if self.capture_bs is not None and self.capture_bs < self.bs:
            raise ValueError(f"capture_bs {self.capture_bs} < bs {self.bs}")
        if self.qo_stride < 0 or self.max_len < 0:
            raise ValueError("qo_stride and max_len must be >= 0")
        if self.head_dim < 1 or self.num_heads < 1 or self.num_kv_heads < 1:
            raise ValueError("head_dim and head counts must be >= 1")
        if self.v_head_dim is not None and self.v_head_dim < 1:
            raise ValueError("v_head_dim must be >= 1")
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")
        if self.prefix_lens and len(self.prefix_lens) != self.bs:
            raise ValueError("prefix_lens needs one entry per real request")
        if any(p < 0 for p in self.prefix_lens):
            raise ValueError("prefix lengths must be >= 0")
        if self.dtype is not None and self.dtype not in OUT_POISON:
            raise ValueError(f"dtype must be one of {sorted(OUT_POISON)}")
        if self.block_m is not None and self.block_m < 1:
            raise ValueError("block_m must be >= 1")

    @property
    def value_dim(self) -> int:
        """V/output head dim: ``v_head_dim``, else 512 for MLA's 576 (kv_lora_rank 512 + rope 64,
        as DeepSeek's MLA runs the extend kernel), else ``head_dim``."""
        if self.v_head_dim is not None:
            return self.v_head_dim
        return 512 if self.head_dim == 576 else self.head_dim

    @property
    def padded_bs(self) -> int:
        return self.capture_bs if self.capture_bs is not None else self.bs

    @property
    def prefixes(self) -> tuple[int, ...]:
        return self.prefix_lens or tuple(3 + 2 * i for i in range(self.bs))

    def fixed(self) -> ReplayCase:
        """The same case with metadata that matches the layout (stride W, max_len W)."""
        return dataclasses.replace(self, qo_stride=self.tokens_per_req, max_len=self.tokens_per_req)


# What one replay may cost, reckoned from its case before anything is allocated: a report's
# numbers are input (a head dim of 10**7 asked for more memory than the machine had; a max_len
# of 2**31 for a grid the interpreter never finished). A real finding's replay is far below both
# (SGLang 0.5.23's largest: one request of 33 tokens at head dim 576, about 11 MiB and 8
# programs); the Triton interpreter runs 5 to 30 programs a second.
MAX_REPLAY_BYTES = 4 << 30
MAX_GRID_PROGRAMS = 1 << 14
# The smallest BLOCK_M a kernel's default picks on any device (`layout.default_block_m`): a case
# without one is reckoned at it, the grid it could launch at most.
SMALLEST_DEFAULT_BLOCK_M = 16
# Index metadata is int32, as the real kernel reads it.
MAX_INDEX = 2**31 - 1
# Bytes a Python object of the judgement takes per real row (the probe map's lists and tuples).
_PYTHON_BYTES_PER_ROW = 400


class ReplayTooLarge(ValueError):
    """A case whose replay would cost more than MAX_REPLAY_BYTES or MAX_GRID_PROGRAMS."""


def shown(n: int) -> str:
    """An integer of a report as a message shows it: in full unless it runs to pages (or past
    what `str` converts)."""
    if abs(n) < 10**24:
        return str(n)
    return f"a number of about {n.bit_length() * 30103 // 100_000 + 1} digits"


def _prefix_total_and_longest(case: ReplayCase) -> tuple[int, int]:
    """`sum(case.prefixes)` and `max(case.prefixes)`, without building the default prefixes
    (3 + 2 * i for each of `bs` requests: a report's bs may be anything)."""
    if case.prefix_lens:
        return sum(case.prefix_lens), max(case.prefix_lens)
    return case.bs * case.bs + 2 * case.bs, 2 * case.bs + 1


def replay_programs(case: ReplayCase) -> int:
    """Programs of the kernel's grid (the probe's is the same): capture batch x heads x
    cdiv(max_len, BLOCK_M)."""
    block_m = case.block_m or SMALLEST_DEFAULT_BLOCK_M
    return case.padded_bs * case.num_heads * grid_rows(case.max_len, block_m) // block_m


def replay_bytes(case: ReplayCase) -> int:
    """At most what a replay of `case` allocates, at 8 bytes an element where it works in
    float64 and 4 elsewhere (no dtype is wider): the guarded buffers of the session, the inputs
    of the runner's layout, the float64 reference and the judgement's temporaries."""
    bs, cbs, w = case.bs, case.padded_bs, case.tokens_per_req
    h, kvh, d, dv = case.num_heads, case.num_kv_heads, case.head_dim, case.value_dim
    rows, real = cbs * w, bs * w
    buffer_rows = 2 * GUARD_ROWS + rows + max(0, cbs * case.qo_stride - rows)
    total, longest_prefix = _prefix_total_and_longest(case)
    pool, longest = 1 + total, longest_prefix + w
    per_token = h * d + kvh * d + kvh * dv  # q, k, v
    session = buffer_rows * (per_token + h * dv + 2 * h) * 4  # with the output and row map
    session += (pool + 2 * GUARD_ROWS) * kvh * (d + dv) * 4 + (3 * cbs + pool + 2) * 4
    inputs = 2 * (rows * per_token + pool * kvh * (d + dv)) * 4  # host copies, then the device's
    reference = 2 * real * h * dv * 8 + (w * h * d + longest * h * (d + dv) * 2) * 8
    reference += 3 * h * w * longest * 8  # scores, masked, softmax
    judgement = buffer_rows * h * dv + 3 * real * h * dv * 8 + real * _PYTHON_BYTES_PER_ROW
    # A quarter more for what the kernels and the interpreter hold while they run (a process
    # grew by 0.72 to 0.94 of the sum above in CPU replays of 90 to 800 MiB).
    return (session + inputs + reference + judgement) * 5 // 4


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB" if n < (1 << 60) else f"more than {1 << 30} GiB"


def check_replay_size(case: ReplayCase) -> None:
    """Refuse (ReplayTooLarge) a case whose replay would exceed the limits above, or whose
    index metadata would not fit int32."""
    cbs = case.padded_bs
    query_top = cbs * max(case.qo_stride, case.tokens_per_req)
    if query_top > MAX_INDEX:
        raise ReplayTooLarge(
            f"its qo_indptr would reach {shown(query_top)}, past int32 (capture bs "
            f"{shown(cbs)}, stride {shown(case.qo_stride)}, {shown(case.tokens_per_req)} "
            "tokens per request)"
        )
    kv_top = 1 + _prefix_total_and_longest(case)[0] + cbs
    if kv_top > MAX_INDEX:
        raise ReplayTooLarge(
            f"its kv_indptr would reach {shown(kv_top)}, past int32 (the prefixes of "
            f"{shown(case.bs)} requests)"
        )
    programs = replay_programs(case)
    if programs > MAX_GRID_PROGRAMS:
        block = case.block_m or SMALLEST_DEFAULT_BLOCK_M
        raise ReplayTooLarge(
            f"its grid would launch {shown(programs)} programs (capture bs {shown(cbs)} x "
            f"{case.num_heads} heads x cdiv(max_len {shown(case.max_len)}, BLOCK_M "
            f"{shown(block)})), above the limit of {MAX_GRID_PROGRAMS}"
        )
    needed = replay_bytes(case)
    if needed > MAX_REPLAY_BYTES:
        raise ReplayTooLarge(
            f"it would allocate about {_gib(needed)} (capture bs {shown(cbs)}, "
            f"{shown(case.tokens_per_req)} tokens per request, stride {shown(case.qo_stride)}, "
            f"head dim {shown(case.head_dim)}, value head dim {shown(case.value_dim)}), above "
            f"the limit of {_gib(MAX_REPLAY_BYTES)}"
        )


@dataclass(frozen=True)
class ReplayResult:
    """What one replay showed. Row indices count the real requests' rows (``bs * W``).

    ``unwritten_rows``: still holding the output poison. ``wrong_rows``: written, but off the
    float64 reference by more than ``tolerance`` (relative to the reference's largest value);
    ``rel_error`` is the largest such error over written rows. ``stray_read_rows``: real rows that
    loaded memory past the layout buffer (they picked up the input guards' NaN poison).
    ``stray_write_rows``: rows written past the layout buffer (out of bounds in a real run).
    ``block_m`` is None when a user kernel picks its own and does not tell.
    """

    case: ReplayCase
    kernel: str
    device: str
    dtype: str
    block_m: int | None
    rows_total: int
    unwritten_rows: tuple[int, ...]
    wrong_rows: tuple[int, ...]
    rel_error: float | None
    stray_read_rows: int
    stray_write_rows: int
    tolerance: float
    probe: ProbeMap | None
    seconds: float

    @property
    def rows_unwritten(self) -> int:
        return len(self.unwritten_rows)

    @property
    def rows_wrong(self) -> int:
        return len(self.wrong_rows)

    @property
    def reproduced(self) -> bool:
        return bool(self.unwritten_rows or self.wrong_rows or self.stray_write_rows)


class RuntimeUnavailable(RuntimeError):
    """The replay cannot run here (no torch/triton, no CUDA device, ...); the message says why."""


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is usable and the interpreter is not forced, else ``cpu``."""
    import os

    try:
        import torch
    except ImportError as exc:
        raise RuntimeUnavailable(f"torch is not importable ({exc})") from exc
    if device == "auto":
        if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
            return "cpu"
        return "cuda"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeUnavailable("no CUDA device is available to torch")
        return device
    if device == "cpu":
        return "cpu"
    raise ValueError(f"device must be auto, cpu or cuda[:N], got {device!r}")


def device_description(device: str) -> str:
    import torch

    if device == "cpu":
        import triton  # type: ignore[import-untyped]

        return f"cpu (Triton {triton.__version__} interpreter, emulating sm90 block sizes)"
    idx = torch.device(device).index or 0
    major, minor = torch.cuda.get_device_capability(idx)
    return f"{torch.cuda.get_device_name(idx)} (sm{major}{minor})"


def device_capability(device: str) -> tuple[int, int] | None:
    if device == "cpu":
        return None
    import torch

    major, minor = torch.cuda.get_device_capability(torch.device(device).index or 0)
    return (major, minor)


@dataclass(frozen=True)
class _Guarded:
    """A buffer with guard rows on both sides; kernels only ever get ``view``."""

    full: torch.Tensor
    view: torch.Tensor
    before: int


def _bits_dtype(dtype: torch.dtype) -> torch.dtype:
    import torch

    return torch.int32 if dtype == torch.float32 else torch.int16


def _guarded(
    rows: int,
    tail: tuple[int, ...],
    dtype: torch.dtype,
    device: str,
    *,
    before: int,
    after: int,
    poison: int,
) -> _Guarded:
    import torch

    full = torch.empty((before + rows + after, *tail), dtype=dtype, device=device)
    full.view(_bits_dtype(dtype)).fill_(poison)
    return _Guarded(full=full, view=full[before : before + rows], before=before)


@dataclass(frozen=True)
class _ReplayData:
    """The real inputs for one replay (the runner's layout), already in the buffers' dtype."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    k_pool: torch.Tensor
    v_pool: torch.Tensor
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor


class ReplaySession:
    """Buffers + a captured launch for one case; :meth:`run` refills, replays and judges.

    Constructing a session allocates, builds the capture-time metadata, warms up (compiles) and
    captures; each :meth:`run` is one replay, which is what a bench times.
    """

    def __init__(
        self,
        case: ReplayCase,
        *,
        device: str = "auto",
        adapter: KernelAdapter | None = None,
        probe: bool = True,
    ) -> None:
        t0 = time.perf_counter()
        check_replay_size(case)  # before anything is allocated
        self.case = case
        self.device = resolve_device(device)
        on_cpu = self.device == "cpu"
        self._check_mode(on_cpu)
        import torch

        from .adapters import IdxcheckKernel

        dtype_name = case.dtype or ("float32" if on_cpu else "bfloat16")
        if on_cpu and dtype_name == "bfloat16":
            raise ValueError("bf16 tl.dot is wrong under the Triton interpreter: use fp32 or fp16")
        self.dtype_name = dtype_name
        self.dtype: torch.dtype = getattr(torch, dtype_name)
        self.adapter: KernelAdapter = adapter or IdxcheckKernel()
        self.device_name = device_description(self.device)
        wanted_block_m = case.block_m or default_block_m(
            case.head_dim, device_capability(self.device)
        )
        self.block_m = self.adapter.block_m(case.head_dim, case.value_dim, wanted_block_m)
        # The probe models the kernel's contract; when a user kernel hides its BLOCK_M we model it
        # with the real kernel's default and say so in the reason.
        self.probe_block_m = self.block_m or wanted_block_m
        self._allocate()
        self._capture_metadata()
        self.sm_scale = case.head_dim**-0.5
        self._launches = self._prepare_launches(wanted_block_m, probe, on_cpu)
        self._graph: Any = None
        if not on_cpu:
            self._graph = self._capture_cuda_graph()
        self.data = self._make_data()
        self.reference = self._reference()
        self.setup_seconds = time.perf_counter() - t0
        self._runs = 0

    @staticmethod
    def _check_mode(on_cpu: bool) -> None:
        """Triton compiles or interprets for the whole process: it must be in the mode asked."""
        from ._jit import ensure_mode

        if not ensure_mode(on_cpu):
            raise RuntimeUnavailable(
                "this process imported triton "
                + (
                    "compiled; a CPU replay needs TRITON_INTERPRET=1 before triton is imported"
                    if on_cpu
                    else "with TRITON_INTERPRET=1; a GPU replay needs it unset"
                )
                + " (replay() and confirm_findings() run such cases in a subprocess)"
            )

    def _allocate(self) -> None:
        """The guarded, poisoned buffers and the metadata tensors, at the padded batch size."""
        import torch

        case = self.case
        bs, cbs, w = case.bs, case.padded_bs, case.tokens_per_req
        h, kvh, d, dv = case.num_heads, case.num_kv_heads, case.head_dim, case.value_dim
        self.buffer_rows = cbs * w
        self.real_rows = bs * w
        # Everything the kernel can touch lies below qo_indptr[capture_bs] = capture_bs * stride:
        # size the tail guard to hold all of it, so a stray access is visible, never a crash.
        overreach = max(0, cbs * case.qo_stride - self.buffer_rows)
        g_after = GUARD_ROWS + overreach
        out_p, in_p = OUT_POISON[self.dtype_name], IN_POISON[self.dtype_name]
        dev = self.device

        def data_buf(rows: int, heads: int, dim: int, *, poison: int, after: int) -> _Guarded:
            return _guarded(
                rows, (heads, dim), self.dtype, dev, before=GUARD_ROWS, after=after, poison=poison
            )

        self.q = data_buf(self.buffer_rows, h, d, poison=in_p, after=g_after)
        self.k = data_buf(self.buffer_rows, kvh, d, poison=in_p, after=g_after)
        self.v = data_buf(self.buffer_rows, kvh, dv, poison=in_p, after=g_after)
        self.o = data_buf(self.buffer_rows, h, dv, poison=out_p, after=g_after)
        # Pool slot 0 is the padded requests' dummy page; real prefixes follow.
        self.pool_slots = 1 + sum(case.prefixes)
        self.k_pool = data_buf(self.pool_slots, kvh, d, poison=in_p, after=GUARD_ROWS)
        self.v_pool = data_buf(self.pool_slots, kvh, dv, poison=in_p, after=GUARD_ROWS)
        idx = torch.int32
        self.qo_indptr = torch.zeros(cbs + 1, dtype=idx, device=dev)
        self.kv_indptr = torch.zeros(cbs + 1, dtype=idx, device=dev)
        self.kv_indices = torch.zeros(self.pool_slots + cbs, dtype=idx, device=dev)
        self.row_map = _guarded(
            self.buffer_rows,
            (h, 2),
            torch.int32,
            dev,
            before=GUARD_ROWS,
            after=g_after,
            poison=-1,
        )

    def _capture_metadata(self) -> None:
        """Capture-time metadata: the backend's formulas at the padded batch size, with dummy
        sequence lengths (every request one prefix token in slot 0), inputs zero."""
        import torch

        cbs = self.case.padded_bs
        self._fill_qo_indptr()
        self.kv_indptr.copy_(
            torch.arange(cbs + 1, dtype=torch.int32, device=self.device) * PAD_PREFIX_LEN
        )
        self.kv_indices.zero_()
        for buf in (self.q, self.k, self.v, self.k_pool, self.v_pool):
            buf.view.zero_()
        self._ptrs = self._metadata_ptrs()

    def _prepare_launches(
        self, wanted_block_m: int, probe: bool, on_cpu: bool
    ) -> list[Callable[[], None]]:
        """The kernel's launch, and the coverage probe's where asked."""
        from .adapters import KernelArgs, follows_extend_contract
        from .probe import prepare_probe

        case = self.case
        args = KernelArgs(
            q=self.q.view,
            k=self.k.view,
            v=self.v.view,
            o=self.o.view,
            k_pool=self.k_pool.view,
            v_pool=self.v_pool.view,
            qo_indptr=self.qo_indptr,
            kv_indptr=self.kv_indptr,
            kv_indices=self.kv_indices,
            max_len=case.max_len,
            sm_scale=self.sm_scale,
            block_m=wanted_block_m,
            interpret=on_cpu,
            tokens_per_req=case.tokens_per_req,
        )
        launches: list[Callable[[], None]] = [self.adapter.prepare(args)]
        # The probe models the extend kernels' contract; another kernel's rows it would misstate.
        self.with_probe = probe and follows_extend_contract(self.adapter)
        if self.with_probe:
            launches.append(
                prepare_probe(
                    self.qo_indptr,
                    self.row_map.view,
                    case.max_len,
                    num_heads=case.num_heads,
                    block_m=self.probe_block_m,
                ).run
            )
        return launches

    # -- metadata ---------------------------------------------------------------------------

    def _fill_qo_indptr(self) -> None:
        """The backend's qo_indptr for the padded batch, written into the buffer in place."""
        import torch

        vals = uniform_indptr(self.case.padded_bs, self.case.qo_stride)
        self.qo_indptr.copy_(torch.tensor(vals, dtype=torch.int32))

    def _metadata_ptrs(self) -> tuple[int, ...]:
        return tuple(
            t.data_ptr()
            for t in (
                self.qo_indptr,
                self.kv_indptr,
                self.kv_indices,
                self.q.full,
                self.k.full,
                self.v.full,
                self.o.full,
                self.k_pool.full,
                self.v_pool.full,
                self.row_map.full,
            )
        )

    # -- capture ----------------------------------------------------------------------------

    def _launch_all(self) -> None:
        for launch in self._launches:
            launch()

    def _capture_cuda_graph(self) -> Any:
        import torch

        # Warm up (compile, autotune) outside the capture, on a side stream as torch requires.
        side = torch.cuda.Stream(device=self.device)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._launch_all()
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._launch_all()
        torch.cuda.synchronize(self.device)
        return graph

    # -- the runner's layout ------------------------------------------------------------------

    def _make_data(self) -> _ReplayData:
        import torch

        case = self.case
        gen = torch.Generator().manual_seed(case.seed)
        bs, cbs, w = case.bs, case.padded_bs, case.tokens_per_req
        h, kvh, d, dv = case.num_heads, case.num_kv_heads, case.head_dim, case.value_dim

        def randn(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, generator=gen, dtype=torch.float32).to(self.dtype)

        # Real requests get data; padded requests' tokens are zero (stale in a real runner).
        q = torch.zeros(cbs * w, h, d, dtype=self.dtype)
        k = torch.zeros(cbs * w, kvh, d, dtype=self.dtype)
        v = torch.zeros(cbs * w, kvh, dv, dtype=self.dtype)
        q[: bs * w] = randn(bs * w, h, d)
        k[: bs * w] = randn(bs * w, kvh, d)
        v[: bs * w] = randn(bs * w, kvh, dv)
        k_pool = randn(self.pool_slots, kvh, d)
        v_pool = randn(self.pool_slots, kvh, dv)
        # Real prefixes live in slots 1.. in a shuffled order (a paged pool is not contiguous).
        perm = (torch.randperm(self.pool_slots - 1, generator=gen) + 1).to(torch.int32)
        lens = [*case.prefixes, *([PAD_PREFIX_LEN] * (cbs - bs))]
        kv_indptr = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
        pad_slots = torch.zeros(PAD_PREFIX_LEN * (cbs - bs), dtype=torch.int32)
        kv_indices = torch.cat([perm, pad_slots])
        dev = self.device
        return _ReplayData(
            q=q.to(dev),
            k=k.to(dev),
            v=v.to(dev),
            k_pool=k_pool.to(dev),
            v_pool=v_pool.to(dev),
            kv_indptr=kv_indptr.to(dev),
            kv_indices=kv_indices.to(dev),
        )

    def _reference(self) -> torch.Tensor:
        """float64 attention over the layout the runner really has: W tokens per request."""
        import torch

        case, data = self.case, self.data
        w, group = case.tokens_per_req, case.num_heads // case.num_kv_heads
        kv_indptr = data.kv_indptr.tolist()
        outs = []
        causal = torch.ones(w, w, dtype=torch.bool, device=self.device).tril()
        for i in range(case.bs):
            slots = data.kv_indices[kv_indptr[i] : kv_indptr[i + 1]].long()
            rows = slice(i * w, (i + 1) * w)
            q = data.q[rows].double()
            k = torch.cat([data.k_pool[slots], data.k[rows]]).double()
            v = torch.cat([data.v_pool[slots], data.v[rows]]).double()
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, k) * self.sm_scale
            prefix = slots.numel()
            visible = torch.cat(
                [torch.ones(w, prefix, dtype=torch.bool, device=self.device), causal], dim=1
            )
            scores = scores.masked_fill(~visible, float("-inf"))
            outs.append(torch.einsum("hqk,khd->qhd", scores.softmax(-1), v))
        return torch.cat(outs)

    # -- replay ----------------------------------------------------------------------------

    def _refill(self, *, poison_inputs: bool = True) -> None:
        """What init_forward_metadata_replay_cuda_graph + the runner's input copy do.

        ``poison_inputs`` False fills the input guards with zeros instead of the NaN poison: see
        :meth:`run` for why a second pass needs that.
        """
        data = self.data
        self._fill_qo_indptr()
        self.kv_indptr.copy_(data.kv_indptr)
        self.kv_indices[: data.kv_indices.numel()].copy_(data.kv_indices)
        bits = _bits_dtype(self.dtype)
        guard_value = IN_POISON[self.dtype_name] if poison_inputs else 0
        for buf, src in (
            (self.q, data.q),
            (self.k, data.k),
            (self.v, data.v),
            (self.k_pool, data.k_pool),
            (self.v_pool, data.v_pool),
        ):
            rows = buf.view.shape[0]
            buf.full[: buf.before].view(bits).fill_(guard_value)
            buf.full[buf.before + rows :].view(bits).fill_(guard_value)
            buf.view.copy_(src)
        self.o.full.view(bits).fill_(OUT_POISON[self.dtype_name])
        self.row_map.full.fill_(-1)
        if self._metadata_ptrs() != self._ptrs:
            raise AssertionError("a captured buffer moved: refills must be in place")

    def _replay_once(self, *, poison_inputs: bool) -> None:
        import torch

        self._refill(poison_inputs=poison_inputs)
        if self._graph is not None:
            self._graph.replay()
            torch.cuda.synchronize(self.device)
        else:
            self._launch_all()

    def run(self) -> ReplayResult:
        """Refill, replay, judge.

        Input guards hold a NaN poison, so any load past the layout buffer shows up, also one the
        kernel loads and then masks out (the extend loop loads a whole key block and applies the
        causal mask afterwards; 0 * NaN is NaN). Such a row tells us about a stray read but not
        whether the row is right: on real hardware the memory there holds finite values that a
        zero weight cancels. So when real rows picked up NaN we replay once more with zeroed
        guards and judge correctness on that pass; the first pass counts the stray reads.
        """
        t0 = time.perf_counter()
        self._replay_once(poison_inputs=True)
        first = self._judge()
        stray_reads = first.nan_rows
        final = first
        if stray_reads:
            self._replay_once(poison_inputs=False)
            final = self._judge()
        seconds = time.perf_counter() - t0 + (self.setup_seconds if self._runs == 0 else 0.0)
        self._runs += 1
        return ReplayResult(
            case=self.case,
            kernel=self.adapter.name,
            device=self.device_name,
            dtype=self.dtype_name,
            block_m=self.block_m,
            rows_total=self.real_rows,
            unwritten_rows=first.unwritten_rows,
            wrong_rows=final.wrong_rows,
            rel_error=final.rel_error,
            stray_read_rows=stray_reads,
            stray_write_rows=max(first.stray_write_rows, final.stray_write_rows),
            tolerance=TOLERANCE[self.dtype_name],
            probe=first.probe,
            seconds=seconds,
        )

    def _judge(self) -> _Pass:
        import torch

        from .probe import read_probe_map

        n = self.real_rows
        bits = self.o.full.view(_bits_dtype(self.dtype)) == OUT_POISON[self.dtype_name]
        body_bits = bits[self.o.before : self.o.before + n]
        # Never written: the exact poison bits survived (a computed NaN has other bits).
        unwritten = body_bits.flatten(1).any(dim=1)
        out = self.o.view[:n].double()
        scale = float(self.reference.abs().max()) if n else 1.0
        err = (out - self.reference).abs().flatten(1).amax(dim=1) / max(scale, 1e-30)
        err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
        written = ~unwritten
        wrong = written & ~(err <= TOLERANCE[self.dtype_name])
        nan_rows = written & torch.isnan(out).flatten(1).any(dim=1)
        finite = written & torch.isfinite(err)
        rel_error = float(err[finite].max()) if bool(finite.any()) else None
        before, rows = self.o.before, self.buffer_rows
        guard = torch.cat([bits[:before], bits[before + rows :]])
        stray = int((~guard.flatten(1).all(dim=1)).sum())
        probe_map: ProbeMap | None = None
        if self.with_probe:
            probe_map = read_probe_map(
                self.row_map.full,
                guard_before=self.row_map.before,
                real_rows=n,
                buffer_rows=rows,
                tokens_per_req=self.case.tokens_per_req,
            )
        unwritten_l = unwritten.cpu().tolist()
        wrong_l = wrong.cpu().tolist()
        return _Pass(
            unwritten_rows=tuple(r for r in range(n) if unwritten_l[r]),
            wrong_rows=tuple(r for r in range(n) if wrong_l[r]),
            rel_error=rel_error,
            nan_rows=int(nan_rows.sum()),
            stray_write_rows=stray,
            probe=probe_map,
        )


@dataclass(frozen=True)
class _Pass:
    """What one replay pass showed (see ``ReplaySession.run`` for why there may be two)."""

    unwritten_rows: tuple[int, ...]
    wrong_rows: tuple[int, ...]
    rel_error: float | None
    nan_rows: int
    stray_write_rows: int
    probe: ProbeMap | None


@dataclass(frozen=True)
class ReplayError:
    """A case that could not be replayed (bad input, kernel failure, ...), with the reason."""

    case: ReplayCase
    reason: str


def replay(
    case: ReplayCase,
    *,
    device: str = "auto",
    kernel: str | KernelAdapter | None = None,
    convention: str | None = None,
    probe: bool = True,
) -> ReplayResult:
    """Capture and replay ``case`` once; ``seconds`` includes setup, compilation and capture.

    ``kernel`` is None (ours), a ``module:function`` spec (see ``adapters.py``) or an adapter
    object. Raises :class:`RuntimeUnavailable` when the replay cannot run here and
    :class:`RuntimeError` when it failed.
    """
    (out,) = replay_many([case], device=device, kernel=kernel, convention=convention, probe=probe)
    if isinstance(out, ReplayError):
        raise RuntimeError(out.reason)
    return out


def replay_many(
    cases: list[ReplayCase],
    *,
    device: str = "auto",
    kernel: str | KernelAdapter | None = None,
    convention: str | None = None,
    probe: bool = True,
    timeout_s: float = 1800.0,
) -> list[ReplayResult | ReplayError]:
    """Replay each case; in this process when its triton is in the right mode, else in one
    subprocess for all of them (see ``_jit.py``). Raises :class:`RuntimeUnavailable` when
    nothing can run (no torch, no CUDA for ``device="cuda"``)."""
    from ._jit import ensure_mode

    dev = resolve_device(device)
    if not cases:
        return []
    interpret = dev == "cpu"
    t0 = time.perf_counter()
    if ensure_mode(interpret):
        out = _replay_here(cases, dev, kernel, convention, probe)
        # Importing triton (when this was the first use) is part of confirming the first case.
        return _charge_first(out, time.perf_counter() - t0 - _seconds(out))
    if kernel is not None and not isinstance(kernel, str):
        reason = "a kernel adapter object cannot be moved to the subprocess this replay needs"
        return [ReplayError(c, reason) for c in cases]
    return _replay_in_subprocess(cases, dev, kernel, convention, probe, timeout_s)


def _replay_here(
    cases: list[ReplayCase],
    device: str,
    kernel: str | KernelAdapter | None,
    convention: str | None,
    probe: bool,
) -> list[ReplayResult | ReplayError]:
    from .adapters import load_user_kernel

    adapter: KernelAdapter | None
    if isinstance(kernel, str):
        try:
            adapter = load_user_kernel(kernel, interpret=device == "cpu", convention=convention)
        except Exception as exc:  # the user's import failing is a result to report, not a crash
            reason = f"could not load kernel {kernel}: {type(exc).__name__}: {exc}"
            return [ReplayError(c, reason) for c in cases]
    else:
        adapter = kernel
    out: list[ReplayResult | ReplayError] = []
    for case in cases:
        try:
            out.append(ReplaySession(case, device=device, adapter=adapter, probe=probe).run())
        except Exception as exc:  # one broken case must not hide the others' results
            out.append(ReplayError(case, f"{type(exc).__name__}: {exc}"))
    return out


def _replay_in_subprocess(
    cases: list[ReplayCase],
    device: str,
    kernel: str | None,
    convention: str | None,
    probe: bool,
    timeout_s: float,
) -> list[ReplayResult | ReplayError]:
    import json
    import os
    import subprocess
    import sys
    import tempfile

    env = dict(os.environ)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    # The child must import this very package: hand it our import path.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    request = {
        "device": device,
        "kernel": kernel,
        "convention": convention,
        "probe": probe,
        "cases": [case_to_dict(c) for c in cases],
    }
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="idxcheck-replay-") as tmp:
        req_path, out_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "result.json")
        with open(req_path, "w", encoding="utf-8") as fh:
            json.dump(request, fh)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", f"{__package__}.worker", req_path, out_path],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return [ReplayError(c, f"replay subprocess exceeded {timeout_s:g} s") for c in cases]
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            reason = f"replay subprocess failed (exit {proc.returncode}): " + " | ".join(tail)
            return [ReplayError(c, reason) for c in cases]
        with open(out_path, encoding="utf-8") as fh:
            payload = json.load(fh)
    wall = time.perf_counter() - t0
    out: list[ReplayResult | ReplayError] = []
    for case, item in zip(cases, payload["results"], strict=True):
        if "error" in item:
            out.append(ReplayError(case, str(item["error"])))
        else:
            out.append(result_from_dict(item))
    # The subprocess's start (process launch, imports) is part of confirming the first case.
    return _charge_first(out, wall - _seconds(out))


def _seconds(results: list[ReplayResult | ReplayError]) -> float:
    return sum(r.seconds for r in results if isinstance(r, ReplayResult))


def _charge_first(
    results: list[ReplayResult | ReplayError], extra: float
) -> list[ReplayResult | ReplayError]:
    out = list(results)
    for i, r in enumerate(out):
        if isinstance(r, ReplayResult):
            out[i] = dataclasses.replace(r, seconds=r.seconds + max(0.0, extra))
            break
    return out


# -- JSON round trip (subprocess replays, emitted tests) -----------------------------------------


def case_to_dict(case: ReplayCase) -> dict[str, Any]:
    d = dataclasses.asdict(case)
    d["prefix_lens"] = list(case.prefix_lens)
    return d


def case_from_dict(d: dict[str, Any]) -> ReplayCase:
    fields = {f.name for f in dataclasses.fields(ReplayCase)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["prefix_lens"] = tuple(kw.get("prefix_lens") or ())
    return ReplayCase(**kw)


def result_to_dict(r: ReplayResult) -> dict[str, Any]:
    probe_d: dict[str, Any] | None = None
    if r.probe is not None:
        probe_d = {
            "computed_as": [list(x) if x is not None else None for x in r.probe.rows.computed_as],
            "stray_rows": r.probe.rows.stray_rows,
            "heads_disagree": r.probe.heads_disagree,
        }
    return {
        "case": case_to_dict(r.case),
        "kernel": r.kernel,
        "device": r.device,
        "dtype": r.dtype,
        "block_m": r.block_m,
        "rows_total": r.rows_total,
        "unwritten_rows": list(r.unwritten_rows),
        "wrong_rows": list(r.wrong_rows),
        "rel_error": r.rel_error,
        "stray_read_rows": r.stray_read_rows,
        "stray_write_rows": r.stray_write_rows,
        "tolerance": r.tolerance,
        "probe": probe_d,
        "seconds": r.seconds,
    }


def result_from_dict(d: dict[str, Any]) -> ReplayResult:
    from .layout import RowMap
    from .probe import ProbeMap

    case = case_from_dict(d["case"])
    probe_map = None
    if d.get("probe") is not None:
        p = d["probe"]
        probe_map = ProbeMap(
            rows=RowMap(
                tokens_per_req=case.tokens_per_req,
                computed_as=tuple(
                    (int(x[0]), int(x[1])) if x is not None else None for x in p["computed_as"]
                ),
                stray_rows=int(p["stray_rows"]),
            ),
            heads_disagree=int(p["heads_disagree"]),
        )
    return ReplayResult(
        case=case,
        kernel=str(d["kernel"]),
        device=str(d["device"]),
        dtype=str(d["dtype"]),
        block_m=d["block_m"],
        rows_total=int(d["rows_total"]),
        unwritten_rows=tuple(d["unwritten_rows"]),
        wrong_rows=tuple(d["wrong_rows"]),
        rel_error=d["rel_error"],
        stray_read_rows=int(d["stray_read_rows"]),
        stray_write_rows=int(d["stray_write_rows"]),
        tolerance=float(d["tolerance"]),
        probe=probe_map,
        seconds=float(d["seconds"]),
    )


def covered_positions(case: ReplayCase, block_m: int) -> int:
    """Positions per request the frozen grid reaches: ``cdiv(max_len, BLOCK_M) * BLOCK_M``."""
    return grid_rows(case.max_len, block_m)
