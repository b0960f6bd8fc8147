"""The few git operations idxcheck needs: the repository holding a path, and a ref's files
exported into a folder. git is run as a subprocess (no library); failures become `GitError`
with git's own message."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# subprocess, tarfile and tempfile are loaded on use: a pre-commit run with a project file
# loads this module (for `GitError`) and runs no git at all, so it skips their import
# (bench/RESULTS.md, "What each change did", and "Measurements that stood in code comments").
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


# More files than this changed since the ref: they are all written from the archive (a list of
# paths this long is near what a command line takes on some systems).
MAX_WRITTEN = 1_000
# The files a scan reads in the folders it walks (`idxcheck.source.discover`).
SCANNED = (".py", ".pyi")


def export_linked(top: str, commit: str, rels: list[str], target: str) -> None:
    """`export`, with each file that the work tree holds unchanged since `commit` (`git diff`
    lists it not) linked instead of written: a symbolic link in `target` to the work tree's
    file, which holds the same text. The changed files (and files deleted since) come from
    `git archive`; the repository's own symbolic links are made again as they are at
    `commit`, so that they lead to the ref's files; and only the files a scan reads are
    exported: linking is faster than writing the tree's files (bench/RESULTS.md,
    "Measurements that stood in code comments"). Written whole where links cannot be made
    (some Windows accounts)."""
    specs = [r for r in rels if r not in ("", ".")] or ["."]
    listed = _git(["ls-tree", "-r", "-z", "--full-name", commit, "--", *specs], top)
    if listed.returncode != 0:
        raise GitError(f"git ls-tree {commit}: {listed.stderr.decode().strip()}")
    changed = _git(["diff", "--name-only", "--no-renames", "-z", commit, "--", *specs], top)
    if changed.returncode != 0:
        raise GitError(f"git diff {commit}: {changed.stderr.decode().strip()}")
    differ = set(changed.stdout.split(b"\0"))
    linked: list[str] = []
    written: list[str] = []
    links: list[tuple[str, str]] = []  # the repository's symbolic links: path, object
    for entry in listed.stdout.split(b"\0"):
        meta, tab, name = entry.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 3 or fields[1] != b"blob":
            continue  # a submodule's commit: not in an archive either
        path = os.fsdecode(name)
        if fields[0] == b"120000":
            links.append((path, fields[2].decode()))
        elif path.endswith(SCANNED) or path in rels:  # the scan reads no other file
            (written if name in differ else linked).append(path)
    if len(written) > MAX_WRITTEN:
        export(top, commit, rels, target)
        return
    try:
        made: set[str] = set()
        for path, source in [
            *((path, os.path.join(top, path)) for path in linked),
            *_link_targets(top, links),
        ]:
            link = os.path.join(target, path)
            folder = os.path.dirname(link)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            os.symlink(source, link)
    except OSError:
        import shutil

        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target, exist_ok=True)
        export(top, commit, rels, target)
        return
    if written:
        export(top, commit, [f":(literal){path}" for path in written], target)


def _link_targets(top: str, links: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each symbolic link's path and what it points to, read from its object."""
    if not links:
        return []
    import subprocess

    request = "".join(f"{obj}\n" for _, obj in links).encode()
    proc = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=top, input=request, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise GitError(f"git cat-file: {proc.stderr.decode().strip()}")
    found: list[tuple[str, str]] = []
    data = proc.stdout
    at = 0
    for path, obj in links:
        end = data.find(b"\n", at)
        header = data[at:end].split(b" ") if end >= 0 else []
        if len(header) != 3 or not header[2].isdigit():
            raise GitError(f"git cat-file: cannot read object {obj} of {path}")
        size = int(header[2])
        found.append((path, os.fsdecode(data[end + 1 : end + 1 + size])))
        at = end + 1 + size + 1  # the object, then a line end
    return found
