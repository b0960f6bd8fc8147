"""Snapshot the JSON and SARIF reports of the fixtures and of real SGLang releases, at the working
tree or at a git ref, and compare two snapshots: the proof that a refactor keeps behaviour.

python -m bench.report_snapshot --out /tmp/before --ref 44ff6e2
python -m bench.report_snapshot --out /tmp/after
python -m bench.report_snapshot --compare /tmp/before /tmp/after

The code at a ref is imported from a checkout of it (`bench.checkout`), so both snapshots run
with the same interpreter and packages. Timing fields are dropped; every other byte of each
report is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.checkout import imported_from, package_at
from bench.sglang_tree import sglang_tree

ROOT = Path(__file__).resolve().parent.parent
RELEASES = (
    "0.4.10.post2",
    "0.5.3",
    "0.5.9",
    "0.5.11",
    "0.5.13",
    "0.5.16",
    "0.5.20",
    "0.5.23",
)
# The twenty releases of bench/RESULTS.md ("Eleven more releases", "Eight more releases"):
# `--releases all` snapshots each of them.
ALL_RELEASES = (
    "0.4.10.post2",
    "0.5.3",
    "0.5.6.post2",
    "0.5.7",
    "0.5.8.post1",
    "0.5.9",
    "0.5.10",
    "0.5.11",
    "0.5.12",
    "0.5.13",
    "0.5.14",
    "0.5.15.post1",
    "0.5.16",
    "0.5.17",
    "0.5.18",
    "0.5.19",
    "0.5.20",
    "0.5.21",
    "0.5.22",
    "0.5.23",
)
FORMATS = ("json", "sarif")
# Keys whose values are wall-clock measurements, dropped wherever they appear.
TIMING_KEYS = frozenset({"seconds", "elapsed", "elapsed_s", "wall_s", "duration", "timing", "time"})


def _drop_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_drop_timing(v) for v in value]
    return value


def _scan(python_path: Path, target: Path, fmt: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(python_path))
    proc = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", str(target), "--format", fmt, "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"scan of {target} ({fmt}) exited {proc.returncode}:\n{proc.stderr}")
    report = _drop_timing(json.loads(proc.stdout))
    return {"exit": proc.returncode, "report": report}


def _targets(releases: tuple[str, ...]) -> list[tuple[str, Path]]:
    targets = [("fixtures", ROOT / "fixtures")]
    targets += [(f"sglang-{v}", sglang_tree(v)) for v in releases]
    return targets


def snapshot(
    out: Path, ref: str | None, releases: tuple[str, ...], formats: tuple[str, ...] = FORMATS
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with package_at(ref) as python_path:
        where = imported_from(python_path, sys.executable)
        assert where.startswith(str(python_path)), f"the snapshot would run {where}"
        for name, target in _targets(releases):
            for fmt in formats:
                result = _scan(python_path, target, fmt)
                text = json.dumps(result, indent=1, sort_keys=True)
                # Paths inside the reports are absolute; make them independent of the cache folder.
                text = text.replace(str(target), f"<{name}>")
                (out / f"{name}.{fmt}.json").write_text(text + "\n")
                print(f"{name} {fmt}: exit {result['exit']}", flush=True)


def compare(first: Path, second: Path) -> int:
    names = sorted({p.name for p in first.glob("*.json")} | {p.name for p in second.glob("*.json")})
    differing = 0
    for name in names:
        a, b = first / name, second / name
        if not a.exists() or not b.exists():
            print(f"{name}: only in {'second' if not a.exists() else 'first'}")
            differing += 1
        elif a.read_bytes() != b.read_bytes():
            print(f"{name}: differs")
            differing += 1
        else:
            print(f"{name}: identical")
    print(f"{len(names) - differing} of {len(names)} reports identical")
    return 1 if differing else 0


def _finding_keys(path: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """A JSON report's findings by what a user compares: place, rule, mode, severity, message."""
    doc = json.loads(path.read_text())["report"]
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for finding in doc.get("findings", []):
        key = tuple(
            json.dumps(finding.get(field), sort_keys=True)
            for field in ("path", "line", "code", "mode", "severity", "message")
        )
        found[key] = finding
    return found


def compare_findings(first: Path, second: Path) -> int:
    """The findings of two snapshots' JSON reports, tree by tree: the counts, and each finding
    only one side has. Counterexamples are compared too: a finding whose counterexample differs
    is listed as changed."""
    names = sorted(
        {p.name for p in first.glob("*.json.json")} | {p.name for p in second.glob("*.json.json")}
    )
    changed_trees = 0
    for name in names:
        a, b = first / name, second / name
        if not a.exists() or not b.exists():
            print(f"{name}: only in {'second' if not a.exists() else 'first'}")
            changed_trees += 1
            continue
        before, after = _finding_keys(a), _finding_keys(b)
        gone = sorted(set(before) - set(after))
        came = sorted(set(after) - set(before))
        moved = sorted(
            k
            for k in set(before) & set(after)
            if before[k].get("counterexample") != after[k].get("counterexample")
        )
        tree = name.removesuffix(".json.json")
        status = "same findings" if not (gone or came or moved) else "changed"
        print(f"{tree}: {len(before)} -> {len(after)} findings, {status}")
        for label, keys in (("-", gone), ("+", came), ("~", moved)):
            for key in keys:
                finding = (before if label == "-" else after)[key]
                print(
                    f"  {label} {finding.get('path')}:{finding.get('line')} {finding.get('code')}"
                    f" {finding.get('mode')} {finding.get('severity')}: {finding.get('message')}"
                )
        changed_trees += bool(gone or came or moved)
    print(f"{len(names) - changed_trees} of {len(names)} trees with the same findings")
    return 1 if changed_trees else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--ref", help="git ref to snapshot (default: the working tree)")
    parser.add_argument(
        "--releases", nargs="*", default=list(RELEASES), help="versions, or `all` for the twenty"
    )
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("FIRST", "SECOND"))
    parser.add_argument(
        "--findings",
        action="store_true",
        help="with --compare: compare the JSON reports' findings, not every byte",
    )
    args = parser.parse_args()
    if args.compare:
        raise SystemExit((compare_findings if args.findings else compare)(*args.compare))
    if args.out is None:
        parser.error("--out is required unless --compare is given")
    releases = ALL_RELEASES if args.releases == ["all"] else tuple(args.releases)
    snapshot(args.out, args.ref, releases, tuple(args.formats))


if __name__ == "__main__":
    main()
