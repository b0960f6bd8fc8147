"""Reports of real SGLang scans (downloaded from PyPI at test time): the SARIF validates against
the official schema, and its fingerprints do not move when unrelated lines are inserted above
a finding or the flagged expression is reformatted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .realtree import sglang_tree
from .sarif_check import assert_valid_sarif_file
from .test_real_sglang import OLD, variant

pytestmark = pytest.mark.network

BACKEND = "srt/layers/attention/triton_backend.py"


@pytest.fixture(scope="module")
def release() -> Path:
    return sglang_tree("0.5.13")


def sarif_of(paths: list[str], cwd: Path, target: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "idxcheck",
            "scan",
            *paths,
            "--format",
            f"sarif={target}",
            "--format",
            "json",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    doc = assert_valid_sarif_file(target)
    assert len(doc["runs"][0]["results"]) == len(json.loads(proc.stdout)["findings"])
    return doc


def draft_extend_v2(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [
        (
            r["ruleId"],
            r["partialFingerprints"]["idxcheck/v1"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in doc["runs"][0]["results"]
        if r["properties"].get("mode") == "DRAFT_EXTEND_V2"
    ]


def test_reverted_fix_fingerprints_survive_edits_above_and_reformatting(
    release: Path, tmp_path: Path
) -> None:
    reverted = variant((release / BACKEND).read_text(), {0, 1})
    backend = tmp_path / "triton_backend.py"
    backend.write_text(reverted)
    before = draft_extend_v2(sarif_of([backend.name], tmp_path, tmp_path / "before.sarif"))
    assert [code for code, _, _ in before] == ["IDX001", "IDX002"]

    # Two unrelated lines right above the first finding, and one at the top of the file.
    lines = reverted.splitlines(keepends=True)
    first = before[0][2]
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
    lines[first - 1 : first - 1] = [f"{indent}# unrelated comment\n", f"{indent}_unused = None\n"]
    backend.write_text("import os\n" + "".join(lines))
    moved = draft_extend_v2(sarif_of([backend.name], tmp_path, tmp_path / "moved.sarif"))
    assert [(c, f) for c, f, _ in moved] == [(c, f) for c, f, _ in before]
    assert [line for _, _, line in moved] == [before[0][2] + 3, before[1][2] + 3]

    # The flagged expressions reformatted: same claim, same fingerprint.
    backend.write_text(reverted.replace(OLD, OLD.replace(" + ", "+")))
    reformatted = draft_extend_v2(
        sarif_of([backend.name], tmp_path, tmp_path / "reformatted.sarif")
    )
    assert [(c, f) for c, f, _ in reformatted] == [(c, f) for c, f, _ in before]


def test_attention_backends_of_a_release_give_valid_sarif(release: Path, tmp_path: Path) -> None:
    tree = tmp_path / "sglang"
    shutil.copytree(release / "srt/layers/attention", tree / "srt/layers/attention")
    (tree / "srt/model_executor").mkdir(parents=True)
    shutil.copy(release / "srt/model_executor/forward_batch_info.py", tree / "srt/model_executor")
    doc = sarif_of(["sglang"], tmp_path, tmp_path / "release.sarif")
    run = doc["runs"][0]
    assert run["invocations"][0]["exitCode"] in (0, 1)
    assert run["properties"]["modeModel"] == "sglang/srt/model_executor/forward_batch_info.py"
    assert run["properties"]["stats"]["files"] > 50
    for result in run["results"]:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("sglang/srt/")
