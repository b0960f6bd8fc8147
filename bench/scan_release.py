"""Scan a whole SGLang release and print what it found and how long it took.

python -m bench.scan_release 0.5.23
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

from bench.sglang_tree import sglang_tree


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("version", nargs="?", default="0.5.23")
    args = parser.parse_args()
    tree = sglang_tree(args.version)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", str(tree), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    doc = json.loads(proc.stdout)
    print(
        f"sglang {args.version}: exit {proc.returncode}, {wall:.1f} s wall, peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    )
    print(f"machine: {platform.machine()}, {platform.python_version()}")
    print("stats:", json.dumps(doc["stats"]))
    print(f"findings: {len(doc['findings'])}, errors: {len(doc['errors'])}")
    for finding in doc["findings"]:
        print(
            f"  {finding['path']}:{finding['line']} {finding['code']} {finding['mode']} {finding['message']}"
        )


if __name__ == "__main__":
    main()
