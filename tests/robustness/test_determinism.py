"""Determinism: the same input gives byte-identical JSON and SARIF across runs (cold, answered
from the cache, or with --no-cache), hash seeds (each run a fresh interpreter with its own
PYTHONHASHSEED) and the order of the paths on the command line; only the wall-clock `stats.seconds` of the JSON report may differ. The solver's
budget is z3's deterministic `rlimit`: an exhausted budget is UNKNOWN (the same obligations
under every seed), which fails the run only under `--strict`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT

PATHS = ["fixtures/bugs", "fixtures/correct", "fixtures/runtime", "fixtures/bad"]
SEEDS = ["0", "1", "4242", "random"]


def run(
    tmp: Path, name: str, paths: list[str], seed: str, *extra: str
) -> tuple[int, dict[str, Any], bytes]:
    json_path, sarif_path = tmp / f"{name}.json", tmp / f"{name}.sarif"
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "idxcheck",
            "scan",
            *paths,
            *extra,
            "--format",
            f"json={json_path}",
            "--format",
            f"sarif={sarif_path}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(json_path.read_text())
    assert isinstance(
        doc["stats"].pop("seconds"), float
    )  # wall-clock: the one field that may differ
    return proc.returncode, doc, sarif_path.read_bytes()


def canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=2).encode()


def test_byte_identical_across_hash_seeds_path_order_and_cache(tmp_path: Path) -> None:
    # The test's own cache (tests/conftest.py): the first run is cold and fills it, the next
    # ones are answered from it, the last one ignores it.
    runs = [run(tmp_path, f"seed{seed}", PATHS, seed) for seed in SEEDS]
    runs.append(run(tmp_path, "reversed", PATHS[::-1], "7"))
    runs.append(run(tmp_path, "uncached", PATHS, "8", "--no-cache"))
    first_code, first_doc, first_sarif = runs[0]
    assert first_doc["findings"] and first_doc["errors"]  # a report with something in it
    for code, doc, sarif in runs[1:]:
        assert code == first_code
        assert canonical(doc) == canonical(first_doc)
        assert sarif == first_sarif


def test_repeated_library_scans_are_equal() -> None:
    from idxcheck.app.run import scan

    first, second = scan(PATHS), scan(PATHS)
    unclocked = replace(first.stats, seconds=0.0)
    assert replace(first, stats=unclocked) == replace(second, stats=unclocked)


@pytest.mark.parametrize("rlimit", ["1", "300"])  # none solved; some solved
def test_exhausted_budget_is_unknown_the_same_way_every_time(tmp_path: Path, rlimit: str) -> None:
    paths = ["fixtures/correct"]
    runs = [
        run(tmp_path, f"r{rlimit}s{seed}", paths, seed, "--rlimit", rlimit) for seed in ("0", "99")
    ]
    (code, doc, sarif), (code2, doc2, sarif2) = runs
    assert canonical(doc) == canonical(doc2) and sarif == sarif2 and code == code2
    unknown = [s for s in doc["sites"] if s["verdict"] == "UNKNOWN"]
    assert doc["stats"]["unknown"] > 0 and unknown
    assert all(s["reason"] for s in unknown)
    # Not a finding and not a pass: the run is clean without --strict, fails with it.
    assert doc["findings"] == [] and code == 0


def test_strict_fails_on_unknown(tmp_path: Path) -> None:
    code, doc, _ = run(tmp_path, "strict", ["fixtures/correct"], "0", "--rlimit", "1", "--strict")
    assert code == 1 and doc["stats"]["unknown"] > 0
    code, doc, _ = run(tmp_path, "enough", ["fixtures/correct"], "0", "--strict")
    assert code == 0 and doc["stats"]["unknown"] == 0
