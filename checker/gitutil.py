"""The few git operations idxcheck needs: the repository holding a path, and a ref's files
exported into a folder. git is run as a subprocess (no library); failures become `GitError`
with git's own message."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# subprocess, tarfile and tempfile are loaded on use: a pre-commit run with a project file
# loads this module (for `GitError`) and runs no git at all; the three cost it 10 ms.
if TYPE_CHECKING:
    import subprocess


class GitError(Exception):
    pass


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    import subprocess

    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None


def toplevel(folder: str) -> str | None:
    """The work tree root of the repository that holds `folder`, or None outside one."""
    proc = _git(["rev-parse", "--show-toplevel"], folder)
    if proc.returncode != 0:
        return None
    return os.path.realpath(proc.stdout.decode().strip())


def resolve_commit(top: str, ref: str) -> str:
    proc = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    if proc.returncode != 0:
        raise GitError(f"not a commit in {top}: {ref!r}")
    return proc.stdout.decode().strip()


def exists_at(top: str, commit: str, rel: str) -> bool:
    spec = f"{commit}^{{tree}}" if rel in ("", ".") else f"{commit}:{rel}"
    return _git(["cat-file", "-e", spec], top).returncode == 0


def export(top: str, commit: str, rels: list[str], target: str) -> None:
    """Write the files of `commit` under the given paths (relative to `top`) into `target`."""
    import subprocess
    import tarfile
    import tempfile

    specs = [r for r in rels if r not in ("", ".")]
    with tempfile.TemporaryFile() as archive:
        proc = subprocess.run(
            [
                "git",
                "archive",
                "--format=tar",
                commit,
                *(["--", *specs] if specs and len(specs) == len(rels) else []),
            ],
            cwd=top,
            stdout=archive,
            stderr=subprocess.PIPE,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(f"git archive {commit}: {proc.stderr.decode().strip()}")
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(target, filter="data")
            else:  # pragma: no cover - Python before the extraction filters
                tar.extractall(target)
