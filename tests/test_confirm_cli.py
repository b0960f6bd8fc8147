"""`idxcheck confirm` and `idxcheck scan --confirm`, run as a user runs them (subprocesses: the
replay fixes triton's mode for the process it runs in). On this CPU the Triton interpreter
replays the counterexample; the runtime extra is part of the test install (`.[dev,runtime]`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .sarif_check import assert_valid_sarif_file

BUG = "fixtures/bugs/eagle_draft_extend_v2.py"


@pytest.fixture(autouse=True)
def _runtime_installed() -> None:
    for name in ("torch", "triton"):
        if importlib.util.find_spec(name) is None:
            pytest.fail(
                f"{name} is missing: install the runtime extra (pip install -e '.[dev,runtime]')"
            )


def idxcheck(
    *args: str, stdin: str | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    code = (
        f"{prelude}import sys; from idxcheck.cli import main; "
        f"sys.argv = ['idxcheck', *{list(args)!r}]; main()"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def findings_json(tmp_path: Path) -> Path:
    target = tmp_path / "findings.json"
    proc = idxcheck("scan", BUG, "--format", f"json={target}")
    assert proc.returncode == 1, proc.stderr
    return target


def test_confirm_rewrites_the_document_in_place(tmp_path: Path) -> None:
    target = findings_json(tmp_path)
    before = json.loads(target.read_text())
    proc = idxcheck(
        "confirm", str(target), "--device", "cpu", "--emit-test", str(tmp_path / "regressions")
    )
    assert proc.returncode == 1, proc.stderr  # confirmed findings
    after = json.loads(target.read_text())
    assert len(after["findings"]) == len(before["findings"])
    statuses = [f["confirmation"]["status"] for f in after["findings"]]
    assert statuses == ["confirmed"] * len(statuses)
    stride = next(f for f in after["findings"] if f["code"] == "IDX001")
    assert "rows never written" in stride["confirmation"]["reason"]
    assert stride["confirmation"]["device"].startswith("cpu")
    # Whose indexing convention the replay used, and that a kernel reads the value.
    assert (
        "convention of SGLang's Triton `extend_attention_fwd`"
        in stride["confirmation"]["convention"]
    )
    assert f"idxcheck confirm: {len(statuses)} confirmed" in proc.stderr
    emitted = sorted(p.name for p in (tmp_path / "regressions").iterdir())
    assert emitted == [
        f"test_idxcheck_{f['code'].lower()}_draft_extend_v2_{i}.py"
        for i, f in enumerate(after["findings"], start=1)
    ]
    for name in emitted:
        compile((tmp_path / "regressions" / name).read_text(), name, "exec")


def test_confirm_reads_stdin_and_writes_stdout(tmp_path: Path) -> None:
    doc = findings_json(tmp_path).read_text()
    proc = idxcheck("confirm", "-", "--device", "cpu", "--no-probe", stdin=doc)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert all(f["confirmation"]["status"] == "confirmed" for f in out["findings"])


def test_scan_confirm_shows_confirmations_in_text_and_sarif(tmp_path: Path) -> None:
    sarif = tmp_path / "out.sarif"
    proc = idxcheck(
        "scan",
        BUG,
        "--confirm",
        "--device",
        "cpu",
        "--format",
        "text",
        "--format",
        f"sarif={sarif}",
    )
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  confirmation: ")]
    assert len(lines) == 2 and all("confirmed: " in line for line in lines)
    doc = assert_valid_sarif_file(sarif)
    for result in doc["runs"][0]["results"]:
        assert result["properties"]["confirmation"]["status"] == "confirmed"
        assert "\nconfirmation: confirmed: " in result["message"]["text"]


def test_without_the_runtime_confirmations_are_skipped_not_crashes(tmp_path: Path) -> None:
    blocked = "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None; "
    proc = idxcheck("scan", BUG, "--confirm", "--device", "cpu", prelude=blocked)
    assert proc.returncode == 1, proc.stderr
    assert "confirmation: skipped: torch is not importable" in proc.stdout


def test_confirm_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("not json")
    assert idxcheck("confirm", str(tmp_path / "bad.json")).returncode == 2
    (tmp_path / "list.json").write_text("[]")
    assert idxcheck("confirm", str(tmp_path / "list.json")).returncode == 2
    assert idxcheck("scan", BUG, "--kernel", "m:f").returncode == 2


def test_checker_package_never_imports_torch_or_triton_at_import() -> None:
    code = (
        "import sys, idxcheck.cli, idxcheck.app.api, idxcheck.app.confirming, idxcheck.report.sarif, "
        "idxcheck.report.html; heavy = [m for m in ('torch', 'triton') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
