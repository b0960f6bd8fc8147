"""Headless Chromium (Debian's `chromium` package) for tests and the docs screenshot.

Located on PATH (or $IDXCHECK_CHROMIUM); a missing browser fails the test that needs it with
how to install it, rather than skipping."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = "apt-get install chromium (Debian), or set IDXCHECK_CHROMIUM to a Chromium binary"


class BrowserMissing(Exception):
    pass


def chromium() -> str:
    configured = os.environ.get("IDXCHECK_CHROMIUM")
    if configured:
        return configured
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing(f"no Chromium found ({', '.join(NAMES)}): {INSTALL}")


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    # A fresh profile per run, and nothing that reaches out to the network.
    with tempfile.TemporaryDirectory(prefix="idxcheck-chromium-") as profile:
        command = [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def dump_dom(page: Path) -> str:
    proc = _run(["--dump-dom", page.resolve().as_uri()])
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def screenshot(page: Path, target: Path, width: int = 1400, height: int = 1000) -> Path:
    proc = _run(
        [
            f"--window-size={width},{height}",
            f"--screenshot={target.resolve()}",
            page.resolve().as_uri(),
        ]
    )
    if proc.returncode != 0 or not target.is_file():
        raise RuntimeError(
            f"chromium --screenshot failed ({proc.returncode}): {proc.stderr[-2000:]}"
        )
    return target
