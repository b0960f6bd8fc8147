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
class Launch:
    """How a server operator gets a finding's counterexample, in the project's terms (the
    profile's `LAUNCH_*`): the command line with its flags and environment, what the served
    model must be, what happens at run time, each symbol's settings, and the symbols that no
    setting is known for."""

    command: str
    model: tuple[str, ...] = ()
    runtime: tuple[str, ...] = ()
    # (symbol, its value, the settings that give it, filled in), in the counterexample's order.
    settings: tuple[tuple[str, int, tuple[str, ...]], ...] = ()
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fix:
    """A replacement of the finding's expression (its span, in its file) that writes the
    runtime's width in the backend's own terms. Applied only on request (`scan --fix`): it is
    an edit of code idxcheck never ran."""

    description: str
    replacement: str  # the new text, with the original written on one line where it keeps it
    original: str  # the expression replaced, on one line
    # Where the new text keeps the original (an arm of a conditional expression): what goes
    # before and after the file's own text of it, comments and line breaks included.
    around: tuple[str, str] | None = None

    def applied(self, segment: str) -> str:
        """The new text for `segment`, the file's text of the original."""
        if self.around is None:
            return self.replacement
        return self.around[0] + segment + self.around[1]


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
    launch: Launch | None = None
    fix: Fix | None = None


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
class ProfileWidth:
    """A forward mode whose obligations were compared with the profile's default width, as
    no runner of that mode was among the scanned files."""

    profile: str
    mode: str
    width: str  # the default width, as the profile writes it


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
    # The modes compared with the profile's default width, in `mode_order`.
    profile_widths: tuple[ProfileWidth, ...] = ()


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
    launch: Launch | None = None,
    fix: Fix | None = None,
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
        launch=launch,
        fix=fix,
    )
