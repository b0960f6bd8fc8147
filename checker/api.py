"""The library API, as `idxcheck.api`: the scan with the reporting policy applied, and what a
caller configures it with.

    from idxcheck.api import scan

    outcome = scan(["python/sglang"])  # as `idxcheck scan python/sglang`: its config file, its cache
    for finding in outcome.result.findings:
        print(finding.span.label(), finding.code, finding.message)

Without a Config, `scan` and `scanned` use `resolve_config(paths)`: the `[tool.idxcheck]` the
CLI would read and the default cache folder. A Config handed to them is used as it is:
`scan(paths, Config(select=frozenset({"IDX001"})))` reads no configuration file and no cache.

The application layer's own module is `idxcheck.app.api`; this one keeps the import path stable."""

from __future__ import annotations

from idxcheck.app.api import (
    ConfigError,
    PolicyOptions,
    Progress,
    discover_files,
    resolve_config,
    scan,
    scanned,
)
from idxcheck.model.config import Config
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.model.outcome import Scan

__all__ = [
    "Config",
    "ConfigError",
    "Finding",
    "PolicyOptions",
    "Progress",
    "Scan",
    "ScanResult",
    "discover_files",
    "resolve_config",
    "scan",
    "scanned",
]
