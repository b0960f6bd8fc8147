"""Headless Chromium (Debian's `chromium` package) for tests and the docs screenshot.

Located on PATH (or $IDXCHECK_CHROMIUM); a missing browser fails the test that needs it with
how to install it, rather than skipping."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

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


# Measures the HTML report's matrix as laid out at the window's size, and writes the boxes
# (CSS pixels, page coordinates at scroll 0) into the DOM, where --dump-dom returns them:
# every matrix cell with the box of its content, the table, the text around it, and for each
# column its header's and the sticky backend column's boxes in the viewport once the page is
# scrolled just far enough to bring the column's right edge into view.
_MEASURE = """
<script>
(() => {
  const page = (r) => [r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY];
  const view = (r) => [r.left, r.top, r.right, r.bottom];
  const content = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const r = range.getBoundingClientRect();
    return r.width || r.height ? page(r) : null;
  };
  const table = document.getElementById("matrix");
  const out = {viewport: [innerWidth, innerHeight],
    pageWidth: document.documentElement.scrollWidth, rows: [], columns: [], around: []};
  for (const id of ["matrix-note", "legend"]) {
    const el = document.querySelector("." + id);
    if (el) out.around.push({name: id, box: page(el.getBoundingClientRect())});
  }
  if (table) {
    out.table = page(table.getBoundingClientRect());
    for (const tr of table.rows) {
      out.rows.push({box: page(tr.getBoundingClientRect()), cells: [...tr.cells].map((c) => ({
        tag: c.tagName.toLowerCase(), scope: c.getAttribute("scope") || "",
        verdict: c.dataset.verdict || "", row: c.dataset.row || "",
        links: c.querySelectorAll("a[href^='#f-']").length,
        text: c.textContent.trim(), box: page(c.getBoundingClientRect()), content: content(c)}))});
    }
    const heads = table.tHead.rows[0].cells;
    const sticky = table.querySelector("th[scope=row]");
    for (let i = 0; i < heads.length; i++) {
      const right = heads[i].getBoundingClientRect().right + scrollX;
      scrollTo(Math.max(0, right - innerWidth), 0);
      out.columns.push({text: heads[i].textContent, scrollX: scrollX,
        head: view(heads[i].getBoundingClientRect()),
        sticky: sticky ? view(sticky.getBoundingClientRect()) : null});
      scrollTo(0, 0);
    }
  }
  const pre = document.createElement("pre");
  pre.id = "idxcheck-layout";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
})();
</script>
"""


def matrix_layout(page: Path, width: int, height: int) -> dict[str, Any]:
    """The matrix of the HTML report `page` as Chromium lays it out in a `width` x `height`
    window (the page itself has no scripts: a copy with the measuring script is loaded)."""
    text = page.read_text(encoding="utf-8")
    assert text.count("</body>") == 1
    with tempfile.TemporaryDirectory(prefix="idxcheck-layout-") as folder:
        measured = Path(folder) / "measured.html"
        measured.write_text(text.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
        proc = _run([f"--window-size={width},{height}", "--dump-dom", measured.as_uri()])
    found = re.search(r'<pre id="idxcheck-layout">(.*?)</pre>', proc.stdout, re.DOTALL)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"chromium --dump-dom failed ({proc.returncode}): {proc.stderr[-2000:]}")
    layout: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return layout
