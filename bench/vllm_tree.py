"""Download a real vLLM release's source from PyPI into the ignored cache and return its package
folder.

vLLM's wheels hold compiled kernels (hundreds of MB) and pip cannot fetch its source
distribution without building its metadata, which needs torch; so the source archive is taken
from the package index's JSON page (PEP 691, what pip reads too), checked against the index's
sha256, and only its `vllm/` folder is unpacked."""

from __future__ import annotations

import hashlib
import json
import tarfile
import urllib.request
from pathlib import Path

from bench.sglang_tree import CACHE

INDEX = "https://pypi.org/simple/vllm/"


def vllm_tree(version: str) -> Path:
    """The `vllm` package folder of release `version` (downloaded once, then reused)."""
    target = CACHE / "vllm" / version
    package = target / "vllm"
    if (target / ".complete").exists():
        return package
    archive = _source_archive(version)
    prefix = f"vllm-{version}/vllm/"
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            if member.name.startswith(prefix) and (member.isfile() or member.isdir()):
                member.name = "vllm/" + member.name[len(prefix) :]
                members.append(member)
        tar.extractall(target, members, filter="data")
    (target / ".complete").write_text("ok\n")
    return package


def _source_archive(version: str) -> Path:
    folder = CACHE / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"vllm-{version}.tar.gz"
    path = folder / name
    if path.exists():
        return path
    request = urllib.request.Request(
        INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        page = json.load(response)
    [entry] = [f for f in page["files"] if f["filename"] == name]
    partial = path.with_suffix(".part")
    urllib.request.urlretrieve(entry["url"], partial)
    digest = hashlib.sha256(partial.read_bytes()).hexdigest()
    if digest != entry["hashes"]["sha256"]:
        partial.unlink()
        raise RuntimeError(f"{name}: sha256 {digest} is not the index's")
    partial.rename(path)
    return path
