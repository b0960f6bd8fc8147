"""Globs of a configuration file (`exclude`, `per-file-ignores`), matched against paths relative
to the folder that holds the file, so that the file means the same from any working directory."""

from __future__ import annotations

import fnmatch
import os


def relative_posix(path: str, root: str | None) -> str:
    """`path` relative to `root` (the current directory when None), with forward slashes."""
    base = os.path.abspath(root) if root else os.getcwd()
    rel = os.path.relpath(os.path.abspath(path), base)
    return rel.replace(os.sep, "/")


def path_matches(rel: str, pattern: str) -> bool:
    """gitignore-like: a pattern without `/` matches any component (`*_test.py`, `tests`); one
    with `/` is anchored at the root and matches the path or any folder above it
    (`python/sglang/test` excludes everything below)."""
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if "/" not in pattern.rstrip("/"):
        bare = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(part, bare) for part in parts)
    anchored = pattern.lstrip("/").rstrip("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:i]), anchored) for i in range(1, len(parts) + 1))
