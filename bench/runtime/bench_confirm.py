"""Time confirming one finding: cold (imports + compile + capture + replay) and per replay.

    python bench/runtime/bench_confirm.py --device cpu
    python bench/runtime/bench_confirm.py --device cuda [--kernel module:function] [--json F]

The finding is the motivating bug (DOMAIN.md section 1): bs 2, topk 4, steps 3, ndt 8, head dim
128, backend stride and max_extend_len steps + 1 = 4 while the runner lays out 8 tokens per
request. Targets (issue 5): GPU under 10 s including kernel compilation and under 50 ms per
replay after; CPU (Triton interpreter, probe included) under 30 s.

Triton's on-disk kernel cache is pointed at a fresh folder (unless --warm-cache) so the cold
number includes compilation. Timings start before torch or triton is imported.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402


def finding(head_dim: int) -> dict[str, Any]:
    return {
        "code": "IDX001",
        "verdict": "REFUTED",
        "mode": "DRAFT_EXTEND_V2",
        "counterexample": {
            "bs": 2,
            "speculative_eagle_topk": 4,
            "speculative_num_steps": 3,
            "speculative_num_draft_tokens": 8,
        },
        "replay": {
            "mode": "DRAFT_EXTEND_V2",
            "bs": 2,
            "capture_bs": 2,
            "tokens_per_req": 8,
            "qo_stride": 4,
            "max_len": 4,
            "block_m": None,
            "head_dim": head_dim,
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--kernel", default=None, help="module:function (bring your own kernel)")
    ap.add_argument("--kernel-adapter", default=None, help="sglang or idxcheck")
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=20, help="timed replays after the first")
    ap.add_argument("--no-probe", action="store_true")
    ap.add_argument("--warm-cache", action="store_true", help="keep Triton's on-disk cache")
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args()

    if not args.warm_cache:
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="idxcheck-bench-triton-")

    from idxcheck.runtime_kernels.confirm import case_from_finding, confirm_findings

    doc: dict[str, Any] = {
        "version": "bench",
        "findings": [finding(args.head_dim)],
        "errors": [],
        "stats": {},
    }
    t0 = time.perf_counter()
    out = confirm_findings(
        doc,
        device=args.device,
        kernel=args.kernel,
        kernel_adapter=args.kernel_adapter,
        probe=not args.no_probe,
    )
    t1 = time.perf_counter()
    conf = out["findings"][0]["confirmation"]
    print(json.dumps(conf, indent=1))
    report: dict[str, Any] = {
        "device_arg": args.device,
        "kernel": args.kernel or "idxcheck",
        "head_dim": args.head_dim,
        "probe": not args.no_probe,
        "confirmation": conf,
        "cold_confirm_call_s": round(t1 - t0, 4),
        "cold_from_process_start_s": round(t1 - T_START, 4),
    }
    if conf["status"] == "skipped":
        print("skipped:", conf["reason"])
        return 1

    # Per-replay cost on a captured session (what a second finding of the same shape costs, and
    # what a user re-running the emitted test pays after the first).
    from idxcheck.runtime_kernels.replay import ReplaySession, resolve_device

    device = resolve_device(args.device)
    adapter = None
    if args.kernel:
        from idxcheck.runtime_kernels.adapters import load_user_kernel

        adapter = load_user_kernel(
            args.kernel, interpret=device == "cpu", convention=args.kernel_adapter
        )
    case = case_from_finding(doc["findings"][0])
    t2 = time.perf_counter()
    session = ReplaySession(case, device=device, adapter=adapter, probe=not args.no_probe)
    t3 = time.perf_counter()
    session.run()
    times = []
    for _ in range(args.repeats):
        ts = time.perf_counter()
        session.run()
        times.append(time.perf_counter() - ts)
    report.update(
        {
            "device": session.device_name,
            "dtype": session.dtype_name,
            "block_m": session.block_m,
            "warm_session_setup_s": round(t3 - t2, 4),
            "replay_s_median": round(statistics.median(times), 5) if times else None,
            "replay_s_min": round(min(times), 5) if times else None,
            "replay_s_max": round(max(times), 5) if times else None,
            "repeats": args.repeats,
            "python": sys.version.split()[0],
        }
    )
    import torch
    import triton  # type: ignore[import-untyped]

    report["torch"], report["triton"] = torch.__version__, triton.__version__
    print(json.dumps({k: v for k, v in report.items() if k != "confirmation"}, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
