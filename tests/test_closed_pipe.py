"""A closed pipe ends the command quietly: `idxcheck rule IDX001 | head -2` says nothing on
standard error and exits 0; a scan whose reader leaves still writes its report files and exits
with its verdict; a stream that fails otherwise (a full device) is still an error, exit 2.

Each test runs the real command into a real pipe whose reader (`head`) has gone, in the order
that makes the failure certain rather than a race: `head` reads its lines and exits first, or
the pipe is too small to hold what is written before `head` leaves."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import FIXTURES

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
COMMAND = (sys.executable, "-m", "idxcheck")


def after_head_left(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run idxcheck into a pipe whose only reader, `head -2`, has read two lines and exited:
    (exit code, what head printed, idxcheck's standard error)."""
    read, write = os.pipe()
    head = subprocess.Popen(["head", "-2"], stdin=read, stdout=subprocess.PIPE, text=True)
    os.close(read)
    os.write(write, b"earlier line 1\nearlier line 2\n")
    shown, _ = head.communicate(timeout=30)
    assert head.returncode == 0
    try:
        proc = subprocess.run(
            [*COMMAND, *args],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=ENV,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    return proc.returncode, shown, proc.stderr


def into_small_pipe(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run idxcheck | head -2 through a pipe of one page: what idxcheck writes past the few
    pages head reads before it exits meets a closed pipe."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    head = subprocess.Popen(["head", "-2"], stdin=read, stdout=subprocess.PIPE, text=True)
    proc = subprocess.Popen(
        [*COMMAND, *args], stdout=write, stderr=subprocess.PIPE, cwd=cwd, env=ENV, text=True
    )
    os.close(read)
    os.close(write)
    shown, _ = head.communicate(timeout=120)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, shown, err


def test_rule_into_a_closed_pipe_ends_quietly_with_0() -> None:
    code, _shown, err = after_head_left("rule", "idx001")
    assert (code, err) == (0, "")


def test_rule_piped_to_head_prints_its_first_lines() -> None:
    code, shown, err = into_small_pipe("rule", "idx001")
    assert (code, err) == (0, "")
    assert shown.splitlines() == ["IDX001 qo-indptr-stride-mismatch (error)", ""]


def test_a_scan_whose_reader_left_keeps_its_verdict_and_its_report_files(
    tmp_path: Path,
) -> None:
    sarif = tmp_path / "report.sarif"
    # The JSON report (56 KB) is cut by head; the SARIF file after it is still written.
    args = ("scan", str(BUG), "--no-cache", "--format", "json", "--format", f"sarif={sarif}")
    code, shown, err = into_small_pipe(*args)
    assert (code, err) == (1, "")  # 1: the findings, not the reader, decide
    assert shown.splitlines()[0] == "{"
    assert json.loads(sarif.read_text())["runs"][0]["results"]
    # Nothing read at all: the same.
    sarif.unlink()
    code, _shown, err = after_head_left(*args)
    assert (code, err) == (1, "")
    assert json.loads(sarif.read_text())["runs"][0]["results"]


def test_a_clean_scan_whose_reader_left_exits_0() -> None:
    clean = FIXTURES / "correct" / "eagle_full_fix.py"
    code, _shown, err = after_head_left("scan", str(clean), "--no-cache", "--format", "json")
    assert (code, err) == (0, "")


def test_a_full_device_is_still_an_error() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*COMMAND, "rule", "IDX001"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=ENV,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 2
    assert "No space left on device" in proc.stderr
    assert "BrokenPipe" not in proc.stderr


def test_a_closed_standard_error_does_not_stop_a_failing_command(tmp_path: Path) -> None:
    # The error's own line cannot be shown: the exit code still says it.
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [*COMMAND, "scan", str(BUG), "--no-cache", "--format", f"json={tmp_path}"],
            stdout=subprocess.PIPE,
            stderr=write,
            env=ENV,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert proc.returncode == 2
    assert proc.stdout == ""


def test_a_broken_pipe_of_another_pipe_is_still_an_internal_error(tmp_path: Path) -> None:
    """A BrokenPipeError from a pipe that is not the command's output (a worker's) is not a
    reader leaving: it stays an internal error, exit 2."""
    script = tmp_path / "run.py"
    script.write_text(
        "import click, sys\n"
        "from idxcheck.cli import main\n"
        "@main.command()\n"
        "def burst() -> None:\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "main(['burst'])\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        env=ENV,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "internal error: BrokenPipeError" in proc.stderr
