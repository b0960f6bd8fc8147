"""The library API: what the CLI runs, usable from Python.

    from idxcheck.app.api import scan
    from idxcheck.model.config import Config

    outcome = scan(["python/sglang"], Config())
    for finding in outcome.result.findings: ...

`scan` is `scanned` (`idxcheck.app.scanning`: the warm path, or the tree read and analysed)
followed by the reporting policy (`idxcheck.app.policy`: suppression comments, whose bare and
unused comments become findings of their own, `per-file-ignores`, and what `PolicyOptions`
asks: `--changed-only`, baselines, `--diff-base`, confirmation)."""

from __future__ import annotations

from collections.abc import Sequence

from idxcheck.app.policy import PolicyOptions, apply_policy
from idxcheck.app.scanning import Progress, discover_files, scanned
from idxcheck.model.config import Config
from idxcheck.model.outcome import Scan

__all__ = ["PolicyOptions", "Progress", "discover_files", "scan", "scanned"]


def scan(
    paths: Sequence[str],
    config: Config | None = None,
    progress: Progress | None = None,
    options: PolicyOptions | None = None,
) -> Scan:
    """The scan of `paths` with the reporting policy applied."""
    config = config or Config()
    return apply_policy(scanned(paths, config, progress), config, options)
