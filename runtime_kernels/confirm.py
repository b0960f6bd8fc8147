"""Confirm refuted findings by replaying their counterexamples on a Triton kernel.

``confirm_findings(doc)`` takes the static checker's findings document and returns a copy in which
every finding with verdict ``REFUTED`` and a ``replay`` block gains::

    "confirmation": {"status": "confirmed" | "not_reproduced" | "skipped", "reason": str,
                     "rows_unwritten": int | None, "rows_wrong": int | None,
                     "rel_error": float | None, "block_m": int | None,
                     "device": str | None, "seconds": float | None}

The ``replay`` block (written by the static core) says what the backend builds and what the
runner lays out::

    {"mode": "DRAFT_EXTEND_V2", "bs": 2, "capture_bs": 2, "tokens_per_req": 3,
     "qo_stride": 2 | null, "max_len": 2 | null, "block_m": null | int, "head_dim": null | int}

An optional ``segments_per_req`` is how many segments of the index pointer the backend gives each
request (null or 1: one). A layout of several (one per token, as DSA's `cu_seqlens_q` in draft
extend) is not replayed: the replay lays out one segment per request, so its counts would not be
the backend's; the confirmation is ``skipped`` with that reason.

``qo_stride``/``max_len`` null mean "the backend derives it consistently": we use W
(``tokens_per_req``). ``block_m`` null means the real kernel's default on the device that runs the
replay (``layout.default_block_m``; the CPU emulates an H200). ``head_dim`` null means 128. An
optional ``v_head_dim`` sets the value head dim (default: 512 for MLA's 576, else ``head_dim``).

This module imports neither torch nor triton at import time, so a missing runtime extra becomes a
``skipped`` confirmation instead of an ImportError.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import math
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from idxcheck.model.replay import ReplayBlock, brief, integer

from .env import INSTALL_HINT
from .layout import grid_rows

if TYPE_CHECKING:
    from .replay import ReplayCase, ReplayResult

DEFAULT_HEAD_DIM = 128
# Heads used by a replay. Which rows get computed does not depend on the head count; a few heads
# with GQA (2 query heads per KV head) exercise the kv-head indexing while staying cheap on a CPU.
DEFAULT_NUM_HEADS = 4
DEFAULT_NUM_KV_HEADS = 2


def is_replayable(finding: Mapping[str, Any]) -> bool:
    return finding.get("verdict") == "REFUTED" and isinstance(finding.get("replay"), Mapping)


# Longest forward-mode name a replay takes (SGLang's are under 20 characters): it names the
# emitted test file.
MAX_MODE_LENGTH = 64


def case_from_finding(finding: Mapping[str, Any], *, dtype: str | None = None) -> ReplayCase:
    """The :class:`ReplayCase` a finding's ``replay`` block describes (ValueError if malformed,
    or if its replay would cost more than ``replay.check_replay_size`` allows)."""
    from .replay import ReplayCase, check_replay_size

    raw = finding.get("replay")
    fallback = finding.get("mode")
    block = ReplayBlock.from_dict(
        raw, fallback if isinstance(fallback, str) and fallback else "UNKNOWN"
    )
    assert isinstance(raw, Mapping)
    w = block.tokens_per_req
    if w is None:
        raise ValueError("replay.tokens_per_req is missing")
    per_request = 1 if block.segments_per_req is None else block.segments_per_req
    if per_request != 1:
        raise ValueError(
            f"the index pointer has {per_request} segments per request (one per token); the "
            "replay lays out one segment per request"
        )
    if len(block.mode) > MAX_MODE_LENGTH:
        raise ValueError(f"replay.mode must be a forward mode's name, got {brief(block.mode)}")
    case = ReplayCase(
        mode=block.mode,
        bs=block.bs,
        capture_bs=block.capture_bs,
        tokens_per_req=w,
        qo_stride=w if block.qo_stride is None else block.qo_stride,
        max_len=w if block.max_len is None else block.max_len,
        block_m=block.block_m,
        head_dim=DEFAULT_HEAD_DIM if block.head_dim is None else block.head_dim,
        # An extra of a report written by hand: a value head dimension of its own (MLA).
        v_head_dim=integer(raw, "v_head_dim"),
        num_heads=DEFAULT_NUM_HEADS,
        num_kv_heads=DEFAULT_NUM_KV_HEADS,
        dtype=dtype,
    )
    check_replay_size(case)
    return case


def _confirmation(
    status: str,
    reason: str,
    *,
    rows_unwritten: int | None = None,
    rows_wrong: int | None = None,
    rel_error: float | None = None,
    block_m: int | None = None,
    device: str | None = None,
    seconds: float | None = None,
    convention: str | None = None,
) -> dict[str, Any]:
    return {
        "status": status,
        "reason": reason,
        "rows_unwritten": rows_unwritten,
        "rows_wrong": rows_wrong,
        "rel_error": rel_error,
        "block_m": block_m,
        "device": device,
        "seconds": seconds,
        "convention": convention,
    }


def runtime_missing() -> str | None:
    """Why the runtime extra is unusable here (None if torch and triton can be imported)."""
    for name in ("torch", "triton"):
        if name in sys.modules:
            if sys.modules[name] is None:  # an import was blocked (tests, sandboxes)
                return f"{name} is not importable"
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{name} is not installed"
    try:
        import torch  # noqa: F401  (importing torch does not import triton, whose mode we keep open)
    except ImportError as exc:  # installed but broken
        return f"torch is not importable ({exc})"
    return None


def _smallest_exposing_block(max_len: int, w: int) -> int | None:
    """Largest power-of-two BLOCK_M >= 16 whose grid stops short of W positions, if any."""
    best = None
    block = 16
    while block <= 256:
        if grid_rows(max_len, block) < w:
            best = block
        block *= 2
    return best


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def explain(result: ReplayResult) -> str:
    """The ``reason`` of a confirmation: what went wrong where, or why nothing showed."""
    from .adapters import IdxcheckKernel

    case = result.case
    bm = result.block_m
    # A user kernel that does not report its BLOCK_M gets no claim about the grid's reach.
    reach = grid_rows(case.max_len, bm) if bm is not None else None
    where = f"bs {case.bs}" + (
        f" padded to capture bs {case.padded_bs}" if case.padded_bs != case.bs else ""
    )
    if result.kernel != IdxcheckKernel.name:
        where += f", kernel {result.kernel}"
    if result.reproduced:
        text = _reproduced(result, reach, where)
    else:
        text = _not_reproduced(result, reach) + f" ({where})"
    if result.stray_read_rows:
        text += (
            f"; {_rows(result.stray_read_rows)} loaded memory past the layout buffer (masked out"
            " here; harmful if that memory holds inf/NaN)"
        )
    if result.probe is not None:
        p = result.probe
        if p.unwritten != result.unwritten_rows or p.wrong != result.wrong_rows:
            text += (
                f"; note: the indexing-contract probe predicts {len(p.unwritten)} unwritten and "
                f"{len(p.wrong)} wrong rows, so this kernel does not follow the contract exactly"
            )
    return text


def _reproduced(result: ReplayResult, reach: int | None, where: str) -> str:
    """What went wrong (rows unwritten, wrong, written out of bounds), and why."""
    case = result.case
    w, n, bm = case.tokens_per_req, result.rows_total, result.block_m
    bm_text = f"BLOCK_M {bm}" if bm is not None else "the kernel's own BLOCK_M (not reported)"
    effects = []
    if result.rows_unwritten:
        effects.append(f"{result.rows_unwritten} of {n} rows never written")
    if result.rows_wrong:
        err = "" if result.rel_error is None else f", max rel error {result.rel_error:.3g}"
        effects.append(f"{result.rows_wrong} of {n} rows written wrong{err}")
    if result.stray_write_rows:
        effects.append(
            f"{_rows(result.stray_write_rows)} written past the {case.padded_bs * w}-row "
            "layout buffer (out of bounds)"
        )
    causes = []
    if case.qo_stride != w:
        causes.append(
            f"qo_indptr stride {case.qo_stride} but the runner lays out {w} tokens per request"
        )
    if reach is not None and reach < w:
        causes.append(
            f"grid covers cdiv({case.max_len}, {bm})*{bm} = {reach} < {w} positions per request"
        )
    text = "; ".join(effects) + f" at {bm_text} ({where})"
    if causes:
        text += ": " + "; ".join(causes)
    example = _example(result)
    if example:
        text += f"; e.g. {example}"
    return text


def _not_reproduced(result: ReplayResult, reach: int | None) -> str:
    """Why nothing showed: latent at this block size, a stride that happens to be harmless, or
    metadata that agrees with the layout."""
    case = result.case
    w, n, bm = case.tokens_per_req, result.rows_total, result.block_m
    if reach is not None and case.max_len < w <= reach:
        text = (
            f"grid covers cdiv(max_len, BLOCK_M)*BLOCK_M = {reach} >= {w} rows per request at "
            f"BLOCK_M {bm}: the mismatch is latent at this block size"
        )
        smaller = _smallest_exposing_block(case.max_len, w)
        if smaller is not None:
            lost = w - grid_rows(case.max_len, smaller)
            text += (
                f" (at BLOCK_M {smaller} it would leave {lost} of {w} rows per request unwritten)"
            )
        else:
            text += " (no BLOCK_M >= 16 exposes it)"
        return text
    if case.qo_stride != w:
        return (
            f"qo_indptr stride {case.qo_stride} differs from {w} tokens per request, yet "
            f"every one of the {n} real rows was computed correctly"
        )
    cover = (
        f"the grid covers {reach} >= {w} positions"
        if reach is not None
        else ("the kernel chose its own block size")
    )
    return (
        f"metadata agrees with the layout: stride {case.qo_stride} = {w} tokens per "
        f"request and {cover}; all {n} rows written and correct"
    )


def _example(result: ReplayResult) -> str:
    """One row, spelled out, from the probe map (which says what each row was computed as)."""
    if result.probe is None:
        return ""
    w = result.case.tokens_per_req
    rows = result.probe.rows.computed_as
    for r in result.wrong_rows:
        got = rows[r] if r < len(rows) else None
        if got is not None:
            return (
                f"row {r} (request {r // w}, position {r % w}) was computed as request {got[0]}, "
                f"position {got[1]}"
            )
    for r in result.unwritten_rows:
        return f"row {r} (request {r // w}, position {r % w}) was never written"
    return ""


# Whose indexing convention a replay with idxcheck's own kernel follows.
OWN_CONVENTION = (
    "idxcheck's extend kernel, in the convention of SGLang's Triton `extend_attention_fwd`: "
    "`qo_indptr` of bs + 1 entries, one segment per request, grid cdiv(max_len, BLOCK_M)"
)


# What the vLLM convention feeds vLLM's `unified_attention` (adapters.VllmConvention).
VLLM_CONVENTION = (
    "vLLM's `unified_attention` convention: `cu_seqlens_q` = the backend's `qo_indptr`, "
    "`seqused_k` = prefix + the runner's tokens per request, KV in a paged cache (block size 16) "
    "written from the runner's layout, causal mask aligned to each sequence's end"
)


def _convention(kernel: str | None, adapter: str | None) -> str:
    if kernel is None:
        return OWN_CONVENTION
    if adapter == "vllm":
        return f"`{kernel}` called in {VLLM_CONVENTION} (adapters.py)"
    return f"`{kernel}` called in the {adapter or 'guessed'} convention (adapters.py)"


def unconsumed(finding: Mapping[str, Any]) -> str | None:
    """Why a finding's value is not replayed: nothing reads it, so no kernel consumes it."""
    consumer = finding.get("consumer")
    if isinstance(consumer, Mapping) and consumer.get("status") == "unread":
        text = consumer.get("text")
        why = f": {brief(text) if not isinstance(text, str) else text[:300]}" if text else ""
        return f"not replayed: nothing reads the value, so no kernel consumes it{why}"
    return None


def confirmation_from_result(result: ReplayResult) -> dict[str, Any]:
    rel = result.rel_error
    if rel is not None and not math.isfinite(rel):
        rel = None
    return _confirmation(
        "confirmed" if result.reproduced else "not_reproduced",
        explain(result),
        rows_unwritten=result.rows_unwritten,
        rows_wrong=result.rows_wrong,
        rel_error=None if rel is None else float(f"{rel:.6g}"),
        block_m=result.block_m,
        device=result.device,
        seconds=round(result.seconds, 4),
    )


# Its keyword-only options (kernel, adapter, device, bounds) take a dozen lines of the
# signature; the body is the loop over findings, each skip said with its reason.
def confirm_findings(
    doc: Mapping[str, Any],
    *,
    kernel: str | None = None,
    kernel_adapter: str | None = None,
    device: str = "auto",
    emit_test_dir: str | None = None,
    probe: bool = True,
    dtype: str | None = None,
) -> dict[str, Any]:
    """Return a copy of ``doc`` whose replayable findings carry a ``confirmation``.

    ``kernel``: None replays with our kernel; ``"module:function"`` imports that function (only
    then) and calls it through the ``kernel_adapter`` convention (``"sglang"``, ``"vllm"`` or
    ``"idxcheck"``, guessed from its parameters when None; see ``adapters.py``). ``device``: ``auto`` (a CUDA GPU
    if usable, else the CPU interpreter), ``cpu`` or ``cuda[:N]``. ``emit_test_dir``: write a
    standalone pytest file per confirmed finding there (``emit_test.py``). ``probe``: also run the
    coverage probe (exact map of what each row was computed as). ``dtype``: override the replay
    dtype (float32 / float16 / bfloat16; bfloat16 is refused on the CPU).
    """
    out: dict[str, Any] = copy.deepcopy(dict(doc))
    findings = out.get("findings") or []
    targets: list[tuple[dict[str, Any], ReplayCase]] = []
    convention = _convention(kernel, kernel_adapter)
    for finding in findings:
        if not isinstance(finding, dict) or not is_replayable(finding):
            continue
        skipped = unconsumed(finding)
        if skipped is not None:
            finding["confirmation"] = _confirmation("skipped", skipped)
            continue
        try:
            targets.append((finding, case_from_finding(finding, dtype=dtype)))
        except ValueError as exc:
            finding["confirmation"] = _confirmation("skipped", f"cannot replay: {exc}")
    if not targets:
        return out

    t0 = time.perf_counter()
    missing = runtime_missing()  # imports torch: part of the first confirmation's time
    if missing is not None:
        for finding, _ in targets:
            finding["confirmation"] = _confirmation(
                "skipped", f"{missing}: the replay needs torch and triton ({INSTALL_HINT})"
            )
        return out

    from .replay import ReplayError, ReplayResult, RuntimeUnavailable, replay_many

    try:
        results = replay_many(
            [case for _, case in targets],
            device=device,
            kernel=kernel,
            convention=kernel_adapter,
            probe=probe,
        )
    except RuntimeUnavailable as exc:
        for finding, _ in targets:
            finding["confirmation"] = _confirmation("skipped", f"cannot replay here: {exc}")
        return out

    # Whatever replay_many did not charge to a case (importing torch above) goes to the first.
    charged = sum(r.seconds for r in results if isinstance(r, ReplayResult))
    extra = max(0.0, time.perf_counter() - t0 - charged)
    for i, r in enumerate(results):
        if isinstance(r, ReplayResult):
            results[i] = dataclasses.replace(r, seconds=r.seconds + extra)
            break
    confirmed: list[tuple[dict[str, Any], ReplayResult]] = []
    for (finding, _), result in zip(targets, results, strict=True):
        if isinstance(result, ReplayError):
            finding["confirmation"] = _confirmation("skipped", f"replay failed: {result.reason}")
            continue
        finding["confirmation"] = {**confirmation_from_result(result), "convention": convention}
        if result.reproduced:
            confirmed.append((finding, result))

    if emit_test_dir is not None and confirmed:
        from .emit_test import write_tests

        write_tests(confirmed, emit_test_dir, kernel=kernel, kernel_adapter=kernel_adapter)
    return out


__all__ = [
    "INSTALL_HINT",
    "case_from_finding",
    "confirm_findings",
    "confirmation_from_result",
    "explain",
    "is_replayable",
    "runtime_missing",
]
