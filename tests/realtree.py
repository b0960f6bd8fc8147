"""Real SGLang trees for tests: downloaded from PyPI at test time into an ignored cache
(`.cache/sglang/<version>/sglang`), never committed. Set IDXCHECK_OFFLINE=1 to skip the tests
that need them, with that reason; otherwise a failed download fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("IDXCHECK_CACHE", ROOT / ".cache"))


def sglang_tree(version: str) -> Path:
    """The `sglang` package folder of release `version`."""
    if os.environ.get("IDXCHECK_OFFLINE"):
        pytest.skip("IDXCHECK_OFFLINE is set: real SGLang releases are not downloaded")
    target = CACHE / "sglang" / version
    package = target / "sglang"
    marker = target / ".complete"
    if marker.exists():
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
        members = [m for m in archive.namelist() if m.startswith("sglang/")]
        archive.extractall(target, members)
    marker.write_text("ok\n")
    return package
