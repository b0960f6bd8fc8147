"""Regenerate docs/report-sglang-0.5.23.png: the HTML report of a real SGLang scan.

The whole `sglang` package of release 0.5.23 (downloaded from PyPI into the ignored .cache/,
or $IDXCHECK_CACHE) scanned as a user scans a checkout, the page rendered by headless Chromium
1,280 px wide, as tall as the backend x forward-mode matrix and its legend.

    python docs/report_screenshot.py            # needs network once, and Debian's chromium

The PNG is recompressed losslessly with Debian's `optipng` where it is installed (the picture of
a whole release is over the 300 KB the repository keeps it under without it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import matrix_layout, screenshot  # noqa: E402
from tests.realtree import sglang_tree  # noqa: E402

VERSION = "0.5.23"
TARGET = ROOT / "docs" / f"report-sglang-{VERSION}.png"
WIDTH = 1280
BELOW_TABLE = 40  # CSS pixels under the matrix: its legend


def main() -> int:
    package = sglang_tree(VERSION)
    with tempfile.TemporaryDirectory(prefix="idxcheck-shot-") as folder:
        page = Path(folder) / "report.html"
        proc = subprocess.run(
            [sys.executable, "-m", "idxcheck", "scan", package.name, "--format", f"html={page}"],
            cwd=package.parent,
            check=False,
        )
        if proc.returncode not in (0, 1):
            return proc.returncode
        bottom = matrix_layout(page, WIDTH, 800)["table"][3]
        screenshot(page, TARGET, WIDTH, int(bottom) + BELOW_TABLE)
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o3", "-strip", "all", str(TARGET)], check=True)
    print(f"wrote {TARGET.relative_to(ROOT)} ({TARGET.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
