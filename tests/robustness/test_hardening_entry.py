"""The command's edges: `python -m idxcheck` run inside the scanned tree imports nothing from
it; a report or baseline that cannot be written is a clear error (exit 2) that leaves nothing
behind and the previous file as it was; a profile name that is not a profile is a
configuration error."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import FIXTURES

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"


def run(
    *args: str, cwd: Path | None = None, python: tuple[str, ...] = (), **kwargs: object
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(
        [sys.executable, *python, "-m", "idxcheck", *args],
        cwd=cwd,
        env=env,
        text=True,
        timeout=120,
        check=False,
        **streams,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------------------------------------
# python -m idxcheck inside the scanned tree

# What `python -m idxcheck scan` imports, found by running one: each name gets a module of the
# tree that records that it ran.
IMPORTED = """
import sys
from idxcheck.cli import main
try:
    main(["scan", sys.argv[1], "--no-cache", "--format", "json", "-o", sys.argv[2]])
except SystemExit:
    pass
print("\\n".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.fixture(scope="module")
def shadowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    base = tmp_path_factory.mktemp("shadow")
    proc = subprocess.run(
        [sys.executable, "-c", IMPORTED, str(BUG), str(base / "r.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    names = set(proc.stdout.split()) - set(sys.builtin_module_names) - {"__main__", "idxcheck"}
    # and what the interpreter's `-m` machinery may import on its way to idxcheck.__main__
    names |= {"runpy", "pkgutil", "importlib", "json", "dataclasses", "re", "click", "typing"}
    assert {"json", "dataclasses", "click", "libcst", "z3"} <= names
    tree, markers = base / "tree", base / "markers"
    tree.mkdir()
    markers.mkdir()
    (tree / "backend.py").write_text(BUG.read_text())
    for name in sorted(names):
        (tree / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    return tree, markers, sorted(names)


@pytest.mark.parametrize("python", [(), ("-P",)], ids=["-m", "-P -m"])
def test_python_m_imports_nothing_from_the_scanned_tree(
    shadowed: tuple[Path, Path, list[str]], python: tuple[str, ...]
) -> None:
    tree, markers, names = shadowed
    for marker in markers.iterdir():
        marker.unlink()
    proc = run("scan", ".", "--no-cache", cwd=tree, python=python)
    ran = sorted(p.name for p in markers.iterdir())
    assert ran == [], f"the tree's modules ran: {ran}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr  # the backend's findings, reported as usual
    assert "backend.py:29:19: IDX001" in proc.stdout
    assert len(names) > 50  # the standard library's modules among them, not only ours


# ---------------------------------------------------------------------------------------------
# reports and baselines that cannot be written


def _limit_file_size() -> None:
    # A full disk, for this process only: a write past 256 bytes fails with EFBIG (the signal
    # it would also raise is ignored). Both files are larger.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))


@pytest.mark.parametrize("option", ["--format=json={}", "--write-baseline={}"])
def test_a_write_that_fails_keeps_the_previous_file_and_leaves_nothing(
    tmp_path: Path, option: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "report.json"
    target.write_text("the previous report\n")
    proc = run(
        "scan", str(BUG), "--no-cache", "--explain", option.format(target),
        preexec_fn=_limit_file_size,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"idxcheck: cannot write {target}: File too large" in proc.stderr
    assert "internal error" not in proc.stderr
    assert target.read_text() == "the previous report\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]


@pytest.mark.parametrize("option", ["--format=sarif={}", "--write-baseline={}", "--output={}"])
def test_a_path_under_a_regular_file_is_a_clear_error(tmp_path: Path, option: str) -> None:
    regular = tmp_path / "regular"
    regular.write_text("x")
    for target in (regular / "report.sarif", regular / "sub" / "report.sarif"):
        args = [option.format(target)] + (["--format=json"] if "output" in option else [])
        proc = run("scan", str(BUG), "--no-cache", *args)
        assert proc.returncode == 2, proc.stderr
        assert f"idxcheck: cannot write {target}: " in proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["regular"]


def test_a_full_device_is_a_clear_error() -> None:
    for args in (["--format", "json=/dev/full"], ["--format", "json"]):
        with open("/dev/full", "w") as full:
            proc = run("scan", str(BUG), "--no-cache", *args, stdout=full, stderr=subprocess.PIPE)
        assert proc.returncode == 2, proc.stderr
        assert "No space left on device" in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr


def test_a_device_or_a_link_is_written_not_replaced(tmp_path: Path) -> None:
    # /dev/stdout (a pipe here) cannot be replaced by a regular file: it is written into.
    proc = run("scan", str(BUG), "--no-cache", "--format", "json=/dev/stdout")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"]
    assert os.path.islink("/dev/stdout")
    # A link to a report: the file it names gets the new report, and the link stays.
    real = tmp_path / "real.json"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    proc = run("scan", str(BUG), "--no-cache", "--format", f"json={link}")
    assert proc.returncode == 1, proc.stderr
    assert link.is_symlink() and json.loads(real.read_text())["findings"]
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


# ---------------------------------------------------------------------------------------------
# profile names


@pytest.mark.parametrize("name", ["__init__", "sglang.x", "", "../sglang"])
def test_a_profile_name_that_is_no_profile_is_a_configuration_error(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / "backend.py").write_text(BUG.read_text())
    (tmp_path / "pyproject.toml").write_text(f'[tool.idxcheck]\nprofile = "{name}"\n')
    # (an empty --profile is no option: click passes it as not given)
    for args, given in (([], name), (["--isolated", "--profile", name or "-"], name or "-")):
        proc = run("scan", ".", "--no-cache", *args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert f"unknown profile {given!r}; profiles: sglang" in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    proc = run("scan", ".", "--no-cache", cwd=tmp_path)
    assert "pyproject.toml" in proc.stderr  # the file and key are named
