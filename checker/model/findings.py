"""What a scan produces: findings, verdicts of sites that are not findings, per-file errors,
statistics. One finding type, with a primary span and related spans."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from idxcheck.model.kinds import Severity
from idxcheck.model.replay import ReplayBlock
from idxcheck.model.spans import Span
from idxcheck.model.verdicts import Verdict


@dataclass(frozen=True)
class Related:
    role: str  # "binding", "runner", "entry", "profile", "dataclass", ...
    message: str
    span: Span | None = None
    # A file the finding depends on, where it has no place in it to show (`span` is None).
    path: str = ""

    @property
    def file(self) -> str:
        """The file of this location: its span's, else `path` ("" when neither)."""
        return self.span.path if self.span is not None else self.path


@dataclass(frozen=True)
class Consumer:
    """Who reads a value: `call` (handed to a call, `callee` its name), `read` (read in the
    class otherwise), `escapes` (its object may be read where the analysis does not look),
    `unread` (nothing reads it: the finding is a note)."""

    status: str
    text: str
    span: Span | None = None
    callee: str = ""


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    span: Span
    function: str
    mode: str
    message: str
    verdict: Verdict
    counterexample: dict[str, int]
    counterexample_text: str
    needs_text: str
    conditions: tuple[tuple[str, bool], ...]
    related: tuple[Related, ...]
    fingerprint: str
    explain: tuple[str, ...] = ()
    replay: ReplayBlock | None = None
    confirmation: dict[str, Any] | None = None
    consumer: Consumer | None = None


@dataclass(frozen=True)
class SiteNote:
    """A verdict other than PROVED and REFUTED, kept for `--strict`, statistics and triage."""

    code: str
    span: Span
    function: str
    mode: str
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class FileError:
    path: str
    message: str


@dataclass(frozen=True)
class Stats:
    files: int = 0
    parsed: int = 0
    sites: int = 0
    obligations: int = 0
    proved: int = 0
    refuted: int = 0
    unknown: int = 0
    unsupported: int = 0
    unreachable: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    # Sites whose verdict is neither PROVED nor REFUTED (UNSUPPORTED, UNKNOWN), with reasons.
    notes: list[SiteNote] = field(default_factory=list)
    # Every decided obligation's verdict, one per (rule, site, mode): the backend x mode matrix.
    outcomes: list[SiteNote] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    mode_model_source: str = ""
    # The profile's forward modes in their order, for reports (set by the engine).
    mode_order: tuple[str, ...] = ()


def fingerprint(*parts: str) -> str:
    """A finding's identity across edits that move it: a digest of what it is, not where."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def make_finding(
    *,
    code: str,
    name: str,
    severity: Severity,
    span: Span,
    message: str,
    identity: tuple[str, ...],
    function: str = "",
    mode: str = "",
    explain: tuple[str, ...] = (),
    related: tuple[Related, ...] = (),
    counterexample: dict[str, int] | None = None,
    counterexample_text: str = "",
    needs_text: str = "",
    conditions: tuple[tuple[str, bool], ...] = (),
    replay: ReplayBlock | None = None,
) -> Finding:
    """A finding, fingerprinted by `identity`."""
    return Finding(
        code=code,
        name=name,
        severity=severity,
        span=span,
        function=function,
        mode=mode,
        message=message,
        verdict=Verdict.REFUTED,
        counterexample=counterexample or {},
        counterexample_text=counterexample_text,
        needs_text=needs_text,
        conditions=conditions,
        related=related,
        fingerprint=fingerprint(*identity),
        explain=explain,
        replay=replay,
    )
