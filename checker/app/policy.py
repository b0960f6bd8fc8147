"""The reporting policy, applied once to a scan: suppression comments, `per-file-ignores`,
`--changed-only`, a baseline written or compared with, `--diff-base`, and confirmation. Each
step takes findings out (keeping what it took) or adds what it learns; none changes a finding's
content but confirmation, which adds the replay's verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from idxcheck.model.config import Config
from idxcheck.model.findings import Finding
from idxcheck.model.outcome import Scan, Scanned, Suppressed
from idxcheck.source.pathmatch import path_matches, relative_posix

if TYPE_CHECKING:
    from idxcheck.app.changed import ChangedFiles
    from idxcheck.app.confirming import ConfirmOptions

# progress(done, total) of the confirmation.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PolicyOptions:
    """What the command line asks of the policy beyond the configuration."""

    changed: ChangedFiles | None = None  # --changed-only: report what touches these files
    write_baseline: str | None = None
    baseline: str | None = None
    diff_base: str | None = None
    scan_paths: tuple[str, ...] = ()  # what a --diff-base scan scans at the ref
    confirm: ConfirmOptions | None = None
    # Where a warning goes (what a --diff-base export leaves out of the ref).
    warn: Callable[[str], None] = lambda _message: None


def apply_policy(
    scanned: Scanned,
    config: Config,
    options: PolicyOptions | None = None,
    progress: Progress | None = None,
) -> Scan:
    options = options or PolicyOptions()
    outcome = _suppress(scanned, config)
    if options.changed is not None:
        outcome = _changed_only(outcome, options.changed)
    if options.write_baseline or options.baseline or options.diff_base:
        outcome = _baselines(outcome, config, options)
    if options.confirm is not None and outcome.result.findings:
        outcome = _confirmed(outcome, options.confirm, progress)
    reported = {f.span.path for f in outcome.result.findings}
    return replace(outcome, texts={p: t for p, t in scanned.texts.items() if p in reported})


def _suppress(scanned: Scanned, config: Config) -> Scan:
    """Suppression comments, then `per-file-ignores`."""
    from idxcheck.app.suppress import apply
    from idxcheck.rules.catalog import known_codes

    codes = known_codes()
    enabled = frozenset(code for code in codes if config.rule_enabled(code))
    result = scanned.result
    applied = apply(result.findings, scanned.comments, enabled=enabled, known=codes)
    suppressed = [Suppressed(finding, comment) for finding, comment in applied.suppressed]
    kept: list[Finding] = []
    ignored: list[Finding] = []
    for finding in (*applied.kept, *applied.meta):
        (ignored if _ignored_for_file(finding, config) else kept).append(finding)
    kept.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.mode))
    return Scan(replace(result, findings=kept), tuple(suppressed), tuple(ignored), scanned.files)


def _ignored_for_file(finding: Finding, config: Config) -> bool:
    if not config.per_file_ignores:
        return False
    rel = relative_posix(finding.span.path, config.root)
    return any(
        finding.code in codes and path_matches(rel, glob) for glob, codes in config.per_file_ignores
    )


def _changed_only(outcome: Scan, changed: ChangedFiles) -> Scan:
    """What touches the changed files: findings whose places are in them, their errors."""
    result = outcome.result
    findings: list[Finding] = []
    elsewhere: list[Finding] = []
    for finding in result.findings:
        touches = changed.touches(finding, result.mode_model_source)
        (findings if touches else elsewhere).append(finding)
    errors = [e for e in result.errors if changed.holds_error(e)]
    return replace(
        outcome,
        result=replace(result, findings=findings, errors=errors),
        elsewhere=tuple(elsewhere),
    )


def _baselines(outcome: Scan, config: Config, options: PolicyOptions) -> Scan:
    """A baseline written (every finding recorded, none reported), then a baseline and a git
    ref compared with: what they hold is reported as baselined."""
    from idxcheck.app import baseline

    findings = list(outcome.result.findings)
    baselined: list[Finding] = []
    stale = 0
    if options.write_baseline:
        baseline.write_baseline(options.write_baseline, findings)
        baselined, findings = findings, []
    if options.baseline:
        split = baseline.split(findings, baseline.load_baseline(options.baseline))
        findings, stale = list(split.new), split.stale
        baselined.extend(split.known)
    if options.diff_base:
        at_ref = baseline.findings_at_ref(
            options.diff_base, list(options.scan_paths), config, _scan_at_ref, options.warn
        )
        split = baseline.split(findings, at_ref)
        findings = list(split.new)
        baselined.extend(split.known)
    return replace(
        outcome,
        result=replace(outcome.result, findings=findings),
        baselined=tuple(baselined),
        baseline_used=True,
        stale_baseline=stale,
    )


def _scan_at_ref(paths: Sequence[str], config: Config) -> Scan:
    from idxcheck.app.scanning import scanned

    return _suppress(scanned(paths, config), config)


def _confirmed(outcome: Scan, options: ConfirmOptions, progress: Progress | None) -> Scan:
    """Each finding with the verdict of its replay."""
    from idxcheck.app.confirming import confirm_document
    from idxcheck.report.json_format import to_dict

    result = outcome.result
    doc = confirm_document(to_dict(result), options, progress)
    confirmed: Sequence[Finding] = [
        replace(f, confirmation=d.get("confirmation"))
        for f, d in zip(result.findings, doc["findings"], strict=True)
    ]
    return replace(outcome, result=replace(result, findings=list(confirmed)))
