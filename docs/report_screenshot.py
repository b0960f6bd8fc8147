"""Regenerate docs/report-sglang-0.5.13.png: the HTML report of a real SGLang scan.

SGLang 0.5.13 (downloaded from PyPI into the ignored .cache/) with the motivating fix reverted
in `srt/layers/attention/triton_backend.py`, scanned together with the rest of its attention
backends and the `ForwardMode` enum; the page is rendered by headless Chromium.

    python docs/report_screenshot.py            # needs network once, and Debian's chromium
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import screenshot  # noqa: E402
from tests.realtree import sglang_tree  # noqa: E402
from tests.test_real_sglang import variant  # noqa: E402

VERSION = "0.5.13"
TARGET = ROOT / "docs" / f"report-sglang-{VERSION}.png"
SCANNED = ("srt/layers/attention", "srt/model_executor/forward_batch_info.py")


def main() -> int:
    package = sglang_tree(VERSION)
    with tempfile.TemporaryDirectory(prefix="idxcheck-shot-") as folder:
        work = Path(folder)
        for rel in SCANNED:
            source, copy = package / rel, work / "sglang" / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, copy)
            else:
                shutil.copy(source, copy)
        backend = work / "sglang/srt/layers/attention/triton_backend.py"
        backend.write_text(variant(backend.read_text(), {0, 1}))  # the fix of both sites reverted
        page = work / "report.html"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "idxcheck",
                "scan",
                *(f"sglang/{rel}" for rel in SCANNED),
                "--format",
                f"html={page}",
            ],
            cwd=work,
            check=False,
        )
        if proc.returncode not in (0, 1):
            return proc.returncode
        screenshot(page, TARGET, 1400, 1600)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
