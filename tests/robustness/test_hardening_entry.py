"""The command's edges: `python -m idxcheck` run inside the scanned tree imports nothing from
it."""

from __future__ import annotations

import os
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
