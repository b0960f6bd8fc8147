"""Finding the files to scan: walk files and folders, skip VCS, virtualenv and build folders and
`--exclude` globs. The walk enters each folder once (by device and inode), so a link back into
the tree is no loop, and follows no symbolic link that leads out of the scanned paths (a link to
`/` or `/proc` would walk the whole machine) unless `follow-links` is set: such a link is a
per-file error that names its target."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

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


class Candidate(NamedTuple):
    """A file to scan. A named tuple rather than a dataclass: a walk makes thousands, and a
    frozen dataclass's constructor is slower, which a warm scan notices (bench/RESULTS.md,
    "Measurements that stood in code comments")."""

    path: str  # as given or found, for reading
    display: str  # as reported
    # (size, mtime_ns, ctime_ns, inode) from the walk's own `stat`: what a warm scan compares
    # instead of reading the file (`idxcheck.incremental.stamps`).
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


def display_name(path: str) -> str:
    """How a path given to the scan is reported: an absolute path below the working folder
    relative to it (as ruff shows it), any other as given. Only the name shown changes: the
    file is read by the path given."""
    if not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path)
    except (OSError, ValueError):  # no working folder (deleted), another drive
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def discover(
    paths: Sequence[str],
    exclude: Sequence[str] = (),
    shown_as: Sequence[str] | None = None,
    follow_links: bool = False,
    link_roots: Sequence[str] = (),
    listed: list[tuple[str, tuple[int, int, int, int]]] | None = None,
) -> Iterator[Candidate | DiscoveryError]:
    """The files under `paths`. `shown_as`: the name to display each path by (the files of a
    git ref exported elsewhere, named as the work tree's), else the path itself; either
    relative to the working folder where it lies below it (`display_name`). Errors name the
    displayed paths too.
    `follow_links`: follow symbolic links that lead out of `paths` too; `link_roots`: folders
    besides `paths` that links may lead into. `listed`: where to add each folder the walk lists,
    with its stamp (a file added or removed there changes it: `idxcheck.memo`)."""
    seen: set[tuple[int, int]] = set()
    visited_dirs: set[tuple[int, int]] = set()  # shared by the roots: no folder walked twice
    roots = None if follow_links else _real_roots([*paths, *link_roots])
    for index, root in enumerate(paths):
        shown = display_name(shown_as[index] if shown_as is not None else root)
        if not os.path.lexists(root):
            yield DiscoveryError(shown, "no such file or directory")
            continue
        if os.path.isdir(root):
            yield from _walk(root, exclude, seen, visited_dirs, shown, roots, listed)
        elif os.path.isfile(root):
            info = _stat(root)
            identity = None if info is None else (info.st_dev, info.st_ino)
            if info is not None and identity not in seen and not _excluded(root, exclude):
                seen.add((info.st_dev, info.st_ino))
                yield Candidate(root, os.path.normpath(shown), _stamp(info))
        else:
            yield DiscoveryError(
                shown, "not a regular file or directory (broken link or special file)"
            )


def _real_roots(paths: Sequence[str]) -> tuple[str, ...]:
    """The scanned paths with their links resolved, each ending with a separator."""
    found = []
    for path in paths:
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            continue
        found.append(real if real.endswith(os.sep) else real + os.sep)
    return tuple(found)


def _outside(path: str, roots: tuple[str, ...]) -> str | None:
    """Where the link `path` leads when that is out of every scanned path; else None."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None  # told apart by the `stat` that follows
    if not os.path.exists(real):
        return None  # a broken link or a loop: the `stat` that follows reports it
    inside = real + os.sep
    return None if any(inside.startswith(root) for root in roots) else real


def _link_error(path: str, target: str) -> DiscoveryError:
    return DiscoveryError(
        path,
        f"symbolic link to {target}, outside the scanned paths: not followed "
        "(`follow-links = true` in [tool.idxcheck] follows it)",
    )


def _walk(
    root: str,
    exclude: Sequence[str],
    seen: set[tuple[int, int]],
    visited_dirs: set[tuple[int, int]],
    shown_root: str,
    roots: tuple[str, ...] | None,
    listed: list[tuple[str, tuple[int, int, int, int]]] | None = None,
) -> Iterator[Candidate | DiscoveryError]:
    """Depth first, each folder's files by name before its subfolders by name (the order of a
    top-down `os.walk`), with one `scandir` per folder and one `stat` per file and folder:
    faster than `os.walk` plus a `stat` per file, which a warm scan notices (bench/RESULTS.md,
    "What each change did"). `roots`: the scanned paths resolved, out of which no link is
    followed (None: links are followed)."""
    info = _stat(root)
    stack: list[tuple[str, os.stat_result | None, str]] = [(root, info, shown_root)]
    while stack:
        folder, folder_info, shown_folder = stack.pop()
        # Files are displayed with normalised paths: the folder's normalised once.
        shown = os.path.normpath(shown_folder)
        shown = "" if shown == "." else shown
        if folder_info is None:
            continue  # a link that leads nowhere: reported by its parent's listing
        identity = (folder_info.st_dev, folder_info.st_ino)
        if identity in visited_dirs:
            continue  # a symlink back into a folder already walked: a loop, or a second route
        visited_dirs.add(identity)
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            yield DiscoveryError(shown or ".", f"cannot read directory: {exc.strerror}")
            continue
        if listed is not None:
            listed.append((folder, _stamp(folder_info)))
        subfolders: list[tuple[str, os.stat_result | None, str]] = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if (
                    name not in SKIP_DIRS
                    and not name.endswith(".egg-info")
                    and not (exclude and _excluded(entry.path, exclude))
                ):
                    if roots is not None and entry.is_symlink():
                        target = _outside(entry.path, roots)
                        if target is not None:
                            yield _link_error(os.path.join(shown, name), target)
                            continue
                    subfolders.append((entry.path, _stat(entry.path), os.path.join(shown, name)))
                continue
            if not name.endswith((".py", ".pyi")):
                continue
            full = entry.path
            if exclude and _excluded(full, exclude):
                continue
            if roots is not None and entry.is_symlink():
                target = _outside(full, roots)
                if target is not None:
                    yield _link_error(os.path.join(shown, name), target)
                    continue
            try:
                file_info: os.stat_result | None = entry.stat()
            except (OSError, ValueError):
                file_info = None
            if file_info is None:
                yield DiscoveryError(
                    os.path.join(shown, name), "broken symbolic link or a link loop"
                )
                continue
            file_identity = (file_info.st_dev, file_info.st_ino)
            if file_identity in seen:
                continue
            seen.add(file_identity)
            if not stat.S_ISREG(file_info.st_mode):
                yield DiscoveryError(os.path.join(shown, name), "not a regular file")
                continue
            yield Candidate(full, os.path.join(shown, name), _stamp(file_info))
        stack.extend(reversed(subfolders))
