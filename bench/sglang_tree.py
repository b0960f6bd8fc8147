"""Download a real SGLang release from PyPI into the ignored cache and return its package folder."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("IDXCHECK_CACHE", ROOT / ".cache"))


def sglang_tree(version: str) -> Path:
    """The `sglang` package folder of release `version` (downloaded once, then reused)."""
    target = CACHE / "sglang" / version
    package = target / "sglang"
    if (target / ".complete").exists():
        return package
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(wheels),
                f"sglang=={version}",
            ],
            check=True,
        )
        found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as archive:
        archive.extractall(target, [m for m in archive.namelist() if m.startswith("sglang/")])
    (target / ".complete").write_text("ok\n")
    return package
