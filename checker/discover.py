"""Finding the files to scan: walk files and folders, skip VCS, virtualenv and build folders and
`--exclude` globs, never follow a symlink into a loop."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "__pycache__",
        ".venv",
        "venv",
        ".env",
        "env",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        "build",
        "dist",
        "site-packages",
        "node_modules",
        ".eggs",
    }
)


@dataclass(frozen=True)
class Candidate:
    path: str  # as given or found, for reading
    display: str  # as reported
    # (size, mtime_ns, ctime_ns, inode) from the walk's own `stat`: what a warm scan compares
    # instead of reading the file (`idxcheck.stamps`).
    stamp: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(frozen=True)
class DiscoveryError:
    path: str
    message: str


def _excluded(path: str, patterns: Sequence[str]) -> bool:
    norm = path.replace(os.sep, "/")
    parts = norm.split("/")
    for pattern in patterns:
        if fnmatch.fnmatch(norm, pattern) or any(fnmatch.fnmatch(p, pattern) for p in parts):
            return True
        if fnmatch.fnmatch(norm, f"*/{pattern}") or fnmatch.fnmatch(norm, f"{pattern}/*"):
            return True
    return False


def _identity(path: str) -> tuple[int, int] | None:
    """The file a path leads to, links followed (device, inode); None when it leads nowhere.
    One `stat` instead of resolving every component: walking a tree of thousands of files
    costs a system call per file."""
    info = _stat(path)
    return None if info is None else (info.st_dev, info.st_ino)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def discover(
    paths: Sequence[str], exclude: Sequence[str] = ()
) -> Iterator[Candidate | DiscoveryError]:
    seen: set[tuple[int, int]] = set()
    for root in paths:
        if not os.path.lexists(root):
            yield DiscoveryError(root, "no such file or directory")
            continue
        if os.path.isdir(root):
            yield from _walk(root, exclude, seen)
        elif os.path.isfile(root):
            info = _stat(root)
            identity = None if info is None else (info.st_dev, info.st_ino)
            if info is not None and identity not in seen and not _excluded(root, exclude):
                seen.add((info.st_dev, info.st_ino))
                yield Candidate(root, os.path.normpath(root), _stamp(info))
        else:
            yield DiscoveryError(
                root, "not a regular file or directory (broken link or special file)"
            )


def _walk(
    root: str, exclude: Sequence[str], seen: set[tuple[int, int]]
) -> Iterator[Candidate | DiscoveryError]:
    visited_dirs: set[tuple[int, int]] = set()
    errors: list[DiscoveryError] = []

    def onerror(exc: OSError) -> None:
        errors.append(
            DiscoveryError(exc.filename or root, f"cannot read directory: {exc.strerror}")
        )

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=True):
        identity = _identity(dirpath)
        if identity is None or identity in visited_dirs:
            # A symlink back into a directory already walked: a loop, or a second route.
            dirnames[:] = []
            continue
        visited_dirs.add(identity)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not (exclude and _excluded(os.path.join(dirpath, d), exclude))
        )
        yield from errors
        errors.clear()
        for name in sorted(filenames):
            if not name.endswith((".py", ".pyi")):
                continue
            full = os.path.join(dirpath, name)
            if exclude and _excluded(full, exclude):
                continue
            try:
                info = os.stat(full)
            except (OSError, ValueError):
                yield DiscoveryError(full, "broken symbolic link or a link loop")
                continue
            file_identity = (info.st_dev, info.st_ino)
            if file_identity in seen:
                continue
            seen.add(file_identity)
            if not stat.S_ISREG(info.st_mode):
                yield DiscoveryError(full, "not a regular file")
                continue
            yield Candidate(full, os.path.normpath(full), _stamp(info))
    yield from errors
