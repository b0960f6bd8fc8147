"""A scan before and after the reporting policy: what the warm path stores (`Scanned`) and what
the application returns (`Scan`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from idxcheck.model.comments import FileComments, Suppression
from idxcheck.model.findings import Finding, ScanResult


@dataclass(frozen=True)
class Scanned:
    """The engine's result, with the suppression comments of the files that may hold one and
    every file walked (as displayed): all the reporting policy needs but its options."""

    result: ScanResult
    comments: tuple[FileComments, ...]
    files: tuple[str, ...]
    # The text analysed of each file a finding may be reported in (by displayed path): code
    # frames quote it, not the file as it is by the time the report is written.
    texts: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Suppressed:
    finding: Finding
    comment: Suppression


@dataclass(frozen=True)
class Scan:
    """A scan with the reporting policy applied.

    `result.findings` are the findings to report (suppression meta findings included); what
    the policy took out is `suppressed` (by a comment), `ignored` (by `per-file-ignores`),
    `elsewhere` (touching no changed file, `--changed-only`) and `baselined` (recorded in a
    baseline, or present at `--diff-base`)."""

    result: ScanResult
    suppressed: tuple[Suppressed, ...]
    ignored: tuple[Finding, ...]
    files: tuple[str, ...]  # every file walked, as displayed
    baselined: tuple[Finding, ...] = ()
    baseline_used: bool = False
    stale_baseline: int = 0  # baseline entries no finding matched
    elsewhere: tuple[Finding, ...] = ()
    # The text analysed of each file a finding is reported in (`Scanned.texts`).
    texts: Mapping[str, str] = field(default_factory=dict)
