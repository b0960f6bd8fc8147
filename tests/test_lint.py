"""The code base passes its own lint: ruff, ruff format and mypy --strict on the package.

mypy needs the import names: the package is assembled from checker/ (`idxcheck`), rules/
(`idxcheck.rules`) and runtime_kernels/ (`idxcheck.runtime_kernels`), which an editable install
maps with an import hook that mypy does not follow. So the test lays the package out as it is
installed, with links, and checks that."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, cwd: Path = ROOT) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"


def test_ruff_check() -> None:
    _run(sys.executable, "-m", "ruff", "check", "--no-cache", ".")


def test_ruff_format() -> None:
    _run(sys.executable, "-m", "ruff", "format", "--check", "--no-cache", ".")


def installed_layout(into: Path) -> Path:
    package = into / "idxcheck"
    package.mkdir(parents=True)
    for entry in (ROOT / "checker").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "rules").symlink_to(ROOT / "rules")
    (package / "runtime_kernels").symlink_to(ROOT / "runtime_kernels")
    return into


def test_mypy_strict(tmp_path: Path) -> None:
    layout = installed_layout(tmp_path / "layout")
    _run(
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(tmp_path / "mypy-cache"),
        "-p",
        "idxcheck",
        cwd=layout,
    )
