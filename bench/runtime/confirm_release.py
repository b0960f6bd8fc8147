"""Confirm the findings of a real release's scan, on our kernel and on SGLang's own.

    idxcheck scan --no-cache .cache/sglang/0.5.23/sglang --format json -o report.json
    python bench/runtime/confirm_release.py report.json --device cuda --out confirmed.json \
        [--kernel module:function] [--kernel-adapter sglang]

It hands the report to `confirm_findings` (the function behind `idxcheck confirm`), which needs
only torch and triton, so that it runs on a GPU host without the static checker's dependencies.
It prints one line per finding (rule, place, status, rows never written and written wrong, the
BLOCK_M and the device) and writes the confirmed report to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from idxcheck.runtime_kernels.confirm import confirm_findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("report", help="a JSON report of `idxcheck scan`")
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--kernel", default=None, help="module:function (bring your own kernel)")
    ap.add_argument("--kernel-adapter", default=None, help="sglang or idxcheck")
    ap.add_argument("--out", required=True, help="where to write the confirmed report")
    args = ap.parse_args()
    with open(args.report, encoding="utf-8") as handle:
        doc = json.load(handle)
    started = time.perf_counter()
    out = confirm_findings(
        doc, kernel=args.kernel, kernel_adapter=args.kernel_adapter, device=args.device
    )
    seconds = time.perf_counter() - started
    counts: dict[str, int] = {}
    for finding in out.get("findings", []):
        c = finding.get("confirmation") or {"status": "none", "reason": "no replay block"}
        counts[c["status"]] = counts.get(c["status"], 0) + 1
        place = f"{finding['path'].split('/srt/')[-1]}:{finding['line']}"
        rows = f"{c.get('rows_unwritten')} unwritten, {c.get('rows_wrong')} wrong"
        print(
            f"{finding['code']} {place} {finding['mode']}: {c['status']}"
            f" ({rows}, BLOCK_M {c.get('block_m')}, {c.get('device')})"
        )
        print(f"    {c['reason']}")
    kernel = args.kernel or "idxcheck's extend kernel"
    print(f"{kernel}: {counts} in {seconds:.2f} s")
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
