"""Replay DOMAIN.md's measured table with our kernel and, optionally, SGLang's own.

    python bench/runtime/domain_table.py --device cuda [--sglang PATH] [--json F]

PATH holds SGLang's ``sglang/srt/layers/attention/triton_ops/extend_attention.py`` (from a
downloaded release, never committed; see RESULTS.md for how it was prepared). Each row replays
the wrong-stride metadata (steps + 1 for both stride and max_extend_len, the original bug), the
wrong-max_len-only metadata (the fix's first commit) and the fixed metadata, prints rows never
written / written wrong per kernel, and the BLOCK_M each used (ours: the device default, which is
SGLang's table; SGLang's: its own choice).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

SGLANG_KERNEL = "sglang.srt.layers.attention.triton_ops.extend_attention:extend_attention_fwd"

# (label, bs, topk, steps, ndt, head dim, heads, kv heads) from DOMAIN.md section 1.
ROWS = [
    ("2,4,3,8 hd128", 2, 4, 3, 8, 128, 4, 4),
    ("4,8,3,16 hd128 GQA", 4, 8, 3, 16, 128, 8, 2),
    ("2,8,3,48 hd576 MLA", 2, 8, 3, 48, 576, 4, 1),
    ("2,1,3,4 topk1", 2, 1, 3, 4, 128, 4, 4),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--sglang", default=None, help="folder holding SGLang's triton_ops")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.sglang:
        sys.path.insert(0, args.sglang)

    from idxcheck.runtime_kernels.replay import ReplayCase, ReplayResult, replay_many

    cases: list[tuple[str, str, ReplayCase]] = []
    for label, bs, _topk, steps, ndt, hd, h, kvh in ROWS:
        base = ReplayCase(
            bs=bs,
            tokens_per_req=ndt,
            qo_stride=steps + 1,
            max_len=steps + 1,
            head_dim=hd,
            num_heads=h,
            num_kv_heads=kvh,
        )
        cases.append((label, "wrong stride", base))
        cases.append((label, "wrong max_len only", dataclasses.replace(base, qo_stride=ndt)))
        cases.append((label, "fixed", base.fixed()))

    kernels: list[tuple[str, str | None]] = [("ours", None)]
    if args.sglang:
        kernels.append(("sglang", SGLANG_KERNEL))
    results: dict[str, list[Any]] = {}
    for name, spec in kernels:
        t0 = time.perf_counter()
        results[name] = replay_many([c for _, _, c in cases], device=args.device, kernel=spec)
        print(f"{name}: {len(cases)} replays in {time.perf_counter() - t0:.2f} s", flush=True)

    def cell(r: Any) -> str:
        if not isinstance(r, ReplayResult):
            return f"error: {r.reason[:60]}"
        return (
            f"{r.rows_unwritten:>3}/{r.rows_total:<3} unwritten, {r.rows_wrong:>3} wrong "
            f"(BLOCK_M {r.block_m})"
        )

    device = next(
        (r.device for rs in results.values() for r in rs if isinstance(r, ReplayResult)), "?"
    )
    print(f"device: {device}")
    header = f"{'case':<22}{'metadata':<20}" + "".join(f"{n:<42}" for n, _ in kernels)
    print(header)
    rows_out = []
    for i, (label, what, case) in enumerate(cases):
        line = f"{label:<22}{what:<20}" + "".join(f"{cell(results[n][i]):<42}" for n, _ in kernels)
        print(line)
        row: dict[str, Any] = {
            "case": label,
            "metadata": what,
            "replay_case": dataclasses.asdict(case),
        }
        for n, _ in kernels:
            r = results[n][i]
            row[n] = (
                {
                    "rows_unwritten": r.rows_unwritten,
                    "rows_wrong": r.rows_wrong,
                    "rows_total": r.rows_total,
                    "block_m": r.block_m,
                    "rel_error": r.rel_error,
                    "seconds": round(r.seconds, 4),
                }
                if isinstance(r, ReplayResult)
                else {"error": r.reason}
            )
        rows_out.append(row)
    agree = all(
        isinstance(a, ReplayResult)
        and isinstance(b, ReplayResult)
        and (a.unwritten_rows, a.wrong_rows) == (b.unwritten_rows, b.wrong_rows)
        for a, b in zip(results["ours"], results.get("sglang", results["ours"]), strict=True)
    )
    if args.sglang:
        print("ours and SGLang's kernel agree row for row:", agree)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"device": device, "rows": rows_out, "agree": agree}, fh, indent=1)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
