"""`idxcheck scan --changed-only FILE...` (the pre-commit hook).

A backend is only correct relative to the runner that lays out its tokens and to the kernel it
launches, so checking a changed file alone would miss a runner change that breaks a backend in
another file. The hook therefore scans the whole project and reports the findings that touch a
changed file: at its primary location, at one of its related locations (binding, runner width,
kernel grid, the dataclass whose field order named a value), or, when the changed file holds
the `ForwardMode` enum every verdict rests on, all of them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from idxcheck.app import gitutil
from idxcheck.app.config_file import common_folder
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError, Finding


def project_root(files: Sequence[str], config: Config) -> str:
    """The folder of the `[tool.idxcheck]` file in use, else the git work tree, else `.`."""
    if config.source:
        return os.path.dirname(os.path.abspath(config.source))
    top = gitutil.toplevel(common_folder(files))
    return top if top is not None else os.getcwd()


def scan_path(root: str) -> str:
    """`root` as the scan should name it: relative to the current folder when below it, so
    that reported paths read like the ones pre-commit passed."""
    rel = os.path.relpath(root)
    return root if rel.startswith("..") else rel


def _key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


class ChangedFiles:
    def __init__(self, files: Iterable[str]) -> None:
        self.keys = frozenset(_key(f) for f in files)

    def touches(self, finding: Finding, mode_model_source: str = "") -> bool:
        if mode_model_source and _key(mode_model_source) in self.keys:
            return True
        if _key(finding.span.path) in self.keys:
            return True
        return any(r.file and _key(r.file) in self.keys for r in finding.related)

    def holds_error(self, error: FileError) -> bool:
        return _key(error.path) in self.keys
