"""A scan with the reporting policy applied: what the application returns and the warm path stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from idxcheck.model.comments import Suppression
from idxcheck.model.findings import Finding, ScanResult

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Suppressed:
    finding: Finding
    comment: Suppression


@dataclass(frozen=True)
class Scan:
    """A scan with the reporting policy applied.

    `result.findings` are the findings to report (suppression meta findings included);
    `suppressed` and `ignored` (by `per-file-ignores`) are what the policy took out."""

    result: ScanResult
    suppressed: tuple[Suppressed, ...]
    ignored: tuple[Finding, ...]
    files: tuple[str, ...]  # every file walked, as displayed
