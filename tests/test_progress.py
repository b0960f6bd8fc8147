"""A progress bar on stderr when stderr is a terminal and the scan is long; nothing otherwise.
Run through a real pseudo-terminal, as a user's shell would."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

from idxcheck.cli.progress import ERASE

from .conftest import ROOT


def many_files(tmp_path: Path, count: int) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    bug = (ROOT / "fixtures/bugs/eagle_draft_extend_v2.py").read_text()
    shutil.copy(ROOT / "fixtures/bugs/eagle_draft_extend_v2.py", tree / "backend.py")
    for i in range(count):
        (tree / f"module_{i:03d}.py").write_text(f"VALUE = {i}\n" if i % 5 else bug)
    return tree


def run_with_stderr_on_a_tty(args: list[str]) -> tuple[int, str, str]:
    main_fd, worker_fd = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "idxcheck", *args],
        stdout=subprocess.PIPE,
        stderr=worker_fd,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(worker_fd)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(main_fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    code = proc.wait(timeout=60)
    os.close(main_fd)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_bar_on_a_terminal_for_a_long_scan(tmp_path: Path) -> None:
    tree = many_files(tmp_path, 40)
    for jobs in ("1", "2"):  # analysed here, and by workers that tell the parent
        code, out, err = run_with_stderr_on_a_tty(
            ["scan", str(tree), "--format", "json", "--no-cache", "-j", jobs]
        )
        assert code == 1
        assert out.lstrip().startswith("{")  # stdout carries only the report
        drawn = err.split(ERASE)
        # Each step in words, the analysis counting files and obligations as it goes.
        assert any(d.startswith("reading 41 files") and "41/41" in d for d in drawn)
        assert any(d.startswith("parsing runners") for d in drawn)
        analysing = [d for d in drawn if d.startswith("analysing ")]
        assert analysing[-1].startswith("analysing 9 classes in 9 files"), analysing
        assert "9/9" in analysing[-1]
        solved = [int(re.search(r"(\d+) obligations solved", d)[1]) for d in analysing]  # type: ignore[index]
        assert solved == sorted(solved) and solved[-1] > solved[0]
        # Nothing stays: every line is redrawn in place, the last erased, no line break.
        assert err.endswith(ERASE) and "\n" not in err


def test_quiet_draws_nothing(tmp_path: Path) -> None:
    tree = many_files(tmp_path, 40)
    code, _, err = run_with_stderr_on_a_tty(["scan", str(tree), "--no-cache", "-q"])
    assert (code, err) == (1, "")


def test_silent_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    tree = many_files(tmp_path, 40)
    proc = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", str(tree)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == ""


def test_no_bar_for_a_short_scan(tmp_path: Path) -> None:
    code, _, err = run_with_stderr_on_a_tty(["scan", "fixtures/bugs/eagle_draft_extend_v2.py"])
    assert code == 1
    assert err == ""


def test_bar_for_confirmations_on_a_terminal(tmp_path: Path) -> None:
    target = tmp_path / "findings.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "idxcheck",
            "scan",
            "fixtures/bugs/eagle_draft_extend_v2.py",
            "--format",
            f"json={target}",
        ],
        cwd=ROOT,
        check=False,
    )
    code, _, err = run_with_stderr_on_a_tty(
        ["confirm", str(target), "--device", "cpu", "--no-probe"]
    )
    assert code == 1
    assert "confirming 2 findings" in err and "2/2" in err
    assert "idxcheck confirm: 2 confirmed" in err
