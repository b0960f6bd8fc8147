"""idxcheck's code at a git ref, importable without installing it: the ref exported with
`git archive` and a folder of links shaped as pyproject's package mapping (`idxcheck` from
checker/, `idxcheck.rules` from rules/, `idxcheck.runtime_kernels` from runtime_kernels/), to put
first on PYTHONPATH. Every script that compares two versions runs both this way, with the same
interpreter and packages."""

from __future__ import annotations

import compileall
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def package_at(ref: str | None) -> Iterator[Path]:
    """A folder to put first on PYTHONPATH so that `import idxcheck` loads the code at `ref`
    (None: the working tree), byte-compiled as an install would be."""
    with tempfile.TemporaryDirectory(prefix="idxcheck-checkout-") as tmp:
        base = Path(tmp)
        source = ROOT
        if ref is not None:
            source = base / "src"
            source.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
                capture_output=True,
                check=True,
            ).stdout
            tar_path = base / "src.tar"
            tar_path.write_bytes(archive)
            with tarfile.open(tar_path) as tar:
                tar.extractall(source, filter="data")
        package = base / "path" / "idxcheck"
        package.mkdir(parents=True)
        for entry in (source / "checker").iterdir():
            (package / entry.name).symlink_to(entry)
        (package / "rules").symlink_to(source / "rules")
        (package / "runtime_kernels").symlink_to(source / "runtime_kernels")
        # compileall does not descend into linked folders: compile the sources themselves.
        for folder in ("checker", "rules", "runtime_kernels"):
            compileall.compile_dir(str(source / folder), quiet=1)
        yield base / "path"


def imported_from(python_path: Path, python: str) -> str:
    """Where `import idxcheck` finds the package with `python_path` first: a check that a
    comparison runs the code it means to."""
    import os

    proc = subprocess.run(
        [python, "-c", "import idxcheck, os; print(os.path.dirname(idxcheck.__file__))"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(python_path)),
    )
    return proc.stdout.strip()
