"""The library API, as `idxcheck.api`: the scan with the reporting policy applied, and what a
caller configures it with.

    from idxcheck.api import Config, scan

    outcome = scan(["python/sglang"], Config(select=frozenset({"IDX001"})))
    for finding in outcome.result.findings:
        print(finding.span.label(), finding.code, finding.message)

The application layer's own module is `idxcheck.app.api`; this one keeps the import path stable."""

from __future__ import annotations

from idxcheck.app.api import PolicyOptions, Progress, discover_files, scan, scanned
from idxcheck.model.config import Config
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.model.outcome import Scan

__all__ = [
    "Config",
    "Finding",
    "PolicyOptions",
    "Progress",
    "Scan",
    "ScanResult",
    "discover_files",
    "scan",
    "scanned",
]
