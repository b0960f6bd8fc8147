"""The library API: what the CLI runs, usable from Python.

    from idxcheck.app.api import scan

    outcome = scan(["python/sglang"])  # configured and cached as `idxcheck scan python/sglang`
    for finding in outcome.result.findings: ...

`scan` is `scanned` (`idxcheck.app.scanning`: the warm path, or the tree read and analysed)
followed by the reporting policy (`idxcheck.app.policy`: suppression comments, whose bare and
unused comments become findings of their own, `per-file-ignores`, and what `PolicyOptions`
asks: `--changed-only`, baselines, `--diff-base`, confirmation).

Without a Config, both resolve the configuration as the CLI does with no flags
(`resolve_config`: the `[tool.idxcheck]` found upward from the paths, and the default cache
folder); a Config handed to them is used as it is (`Config()`: the defaults, no file, no
cache). To change one setting of the CLI's configuration:
`dataclasses.replace(resolve_config(paths), select=frozenset({"IDX001"}))`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from idxcheck.app import scanning
from idxcheck.app.command import check_diff_base
from idxcheck.app.command import resolve_config as _resolve
from idxcheck.app.config_file import ConfigError
from idxcheck.app.policy import PolicyOptions, apply_policy
from idxcheck.app.scanning import Progress, discover_files
from idxcheck.model.config import Config
from idxcheck.model.outcome import Scan, Scanned

__all__ = [
    "ConfigError",
    "PolicyOptions",
    "Progress",
    "discover_files",
    "resolve_config",
    "scan",
    "scanned",
]


def resolve_config(
    paths: Sequence[str],
    *,
    config_file: str | None = None,
    isolated: bool = False,
    cache: bool = True,
) -> Config:
    """The Config `idxcheck scan PATHS` runs with: `[tool.idxcheck]` of `config_file`, else of
    the nearest pyproject.toml above `paths` that has one (none when `isolated`), and the
    default cache folder (`$IDXCHECK_CACHE_DIR`, ...; none when not `cache`). Raises
    ConfigError, naming the file and key, for a configuration the CLI would reject."""
    return _resolve(paths, None, config_file, isolated, not cache).config


def scanned(
    paths: Sequence[str], config: Config | None = None, progress: Progress | None = None
) -> Scanned:
    """The scan of `paths` before the reporting policy; `config` None: `resolve_config`."""
    return scanning.scanned(paths, resolve_config(paths) if config is None else config, progress)


def scan(
    paths: Sequence[str],
    config: Config | None = None,
    progress: Progress | None = None,
    options: PolicyOptions | None = None,
) -> Scan:
    """The scan of `paths` with the reporting policy applied; `config` None: `resolve_config`
    (the CLI's configuration file and cache). A `diff_base` of `options` (whose `scan_paths`
    default to `paths`) that git cannot resolve is a `gitutil.GitError` before the scan."""
    config = resolve_config(paths) if config is None else config
    base = options.diff_base if options is not None else None
    if options is not None and base:
        if not options.scan_paths:  # the ref's files are those of the same paths
            options = replace(options, scan_paths=tuple(paths))
        check_diff_base(base, options.scan_paths)
    return apply_policy(scanning.scanned(paths, config, progress), config, options)
