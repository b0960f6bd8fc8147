"""The package installs as a wheel and as an editable install, with the package-dir mapping
(checker/ -> idxcheck, rules/ -> idxcheck.rules, runtime_kernels/ -> idxcheck.runtime_kernels),
and the static checker imports neither z3 nor torch nor triton until it needs them."""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = (
    "import idxcheck, idxcheck.rules, idxcheck.runtime_kernels, idxcheck.cli;"
    "import idxcheck.profiles.sglang as p;"
    "from idxcheck.rules import REGISTRY;"
    "assert [r.code for r in REGISTRY][:2] == ['IDX001', 'IDX002'];"
    "print(idxcheck.__file__)"
)


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(where)
    return where


@pytest.mark.slow
def test_wheel_then_editable_install(env: Path, tmp_path: Path) -> None:
    python = str(env / "bin" / "python")
    wheel_dir = tmp_path / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ]
    )
    wheel = next(wheel_dir.glob("idxcheck-*.whl"))
    _run([python, "-m", "pip", "install", "-q", str(wheel)])
    where = _run([python, "-c", CHECK], cwd=tmp_path)
    assert "site-packages" in where
    out = _run([str(env / "bin" / "idxcheck"), "rules"], cwd=tmp_path)
    assert "IDX001" in out
    _run([python, "-m", "pip", "uninstall", "-q", "-y", "idxcheck"])
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)])
    where = _run([python, "-c", CHECK], cwd=tmp_path)
    assert str(ROOT / "checker") in where


def test_static_checker_imports_stay_light() -> None:
    code = (
        "import sys, idxcheck.cli, idxcheck.check.pipeline, idxcheck.report.text;"
        "heavy = [m for m in ('z3', 'torch', 'triton') if m in sys.modules];"
        "assert not heavy, heavy"
    )
    _run([sys.executable, "-c", code])


def test_only_the_solver_module_imports_z3() -> None:
    def imports(path: Path, module: str) -> bool:
        pattern = re.compile(rf"^\s*(import {module}\b|from {module}\b)", re.MULTILINE)
        return bool(pattern.search(path.read_text()))

    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "checker").rglob("*.py")
        if imports(path, "z3") and path.name != "solver.py"
    ]
    assert offenders == []
    torchy = [
        str(path.relative_to(ROOT))
        for folder in ("checker", "rules")
        for path in (ROOT / folder).rglob("*.py")
        if imports(path, "torch") or imports(path, "triton")
    ]
    assert torchy == []
