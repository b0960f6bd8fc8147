"""Download a real vLLM release's source into the ignored cache and return its package folder.

vLLM's wheels hold compiled kernels (hundreds of MB) and pip cannot fetch its source
distribution without building its metadata, which needs torch; so the source archive is taken
from the project page of the indexes pip is configured with (`bench.pip_index`: PEP 691 or
PEP 503, what pip reads too), checked against the index's sha256, and only its `vllm/` folder
is unpacked."""

from __future__ import annotations

import tarfile
from pathlib import Path

from bench.pip_index import download
from bench.sglang_tree import CACHE


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
    return download("vllm", name, path)
