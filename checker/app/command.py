"""`idxcheck scan` as the application runs it: the configuration (files, then the command
line), the policy's options (`--changed-only`, baselines, `--diff-base`, confirmation), the exit
code, and the report. The click command only parses options, draws progress and writes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from idxcheck.app.config_file import (
    ConfigError,
    Overrides,
    build_config,
    find_config,
    load_config_file,
)
from idxcheck.app.policy import PolicyOptions
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.model.outcome import Scan
from idxcheck.model.verdicts import Verdict

if TYPE_CHECKING:
    from collections.abc import Callable

    from idxcheck.app.confirming import ConfirmOptions
    from idxcheck.report.context import Report

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


class RequestError(Exception):
    """What the command line asks cannot be done as asked: a usage error."""


@dataclass(frozen=True)
class ScanRequest:
    paths: tuple[str, ...]
    overrides: Overrides
    config_path: str | None = None
    isolated: bool = False
    no_cache: bool = False
    jobs: int = 0
    baseline: str | None = None
    write_baseline: str | None = None
    diff_base: str | None = None
    changed_only: bool = False
    confirm: ConfirmOptions | None = None


@dataclass(frozen=True)
class Prepared:
    """What a request resolves to before the scan: its configuration, the paths it scans (the
    whole project for `--changed-only`) and the policy's options."""

    config: Config
    scan_paths: tuple[str, ...]
    options: PolicyOptions
    # Errors of the scan and the policy that are the user's (a bad domain constraint, a
    # baseline that cannot be read, a git ref that does not resolve).
    usage_errors: tuple[type[Exception], ...]


def prepare(request: ScanRequest, warn: Callable[[str], None]) -> Prepared:
    """The request resolved, or RequestError naming what is wrong with it."""
    if request.baseline and request.write_baseline:
        raise RequestError("--baseline and --write-baseline are exclusive")
    if request.diff_base is not None and not request.diff_base.strip():
        raise RequestError(
            "--diff-base needs a git ref (a branch, tag or commit), not an empty one"
        )
    config = _config(request)
    # Git and baseline support is loaded only by the options that use them.
    usage_errors: list[type[Exception]] = [ValueError]
    if request.baseline or request.write_baseline or request.diff_base:
        from idxcheck.app import baseline, gitutil

        usage_errors += [baseline.BaselineError, gitutil.GitError]
    changed_files = None
    scan_paths = request.paths
    if request.changed_only:
        from idxcheck.app import changed, gitutil

        usage_errors.append(gitutil.GitError)
        try:
            changed_files = changed.ChangedFiles(request.paths)
            scan_paths = (changed.scan_path(changed.project_root(request.paths, config)),)
        except gitutil.GitError as exc:
            raise RequestError(str(exc)) from None
        # Tree facts come from the whole project; classes are analysed only where a finding
        # could touch a changed file (the pipeline widens this to every class when a changed
        # file holds a runner, the mode enum or another tree fact).
        config = replace(config, focus=request.paths)
    options = PolicyOptions(
        changed=changed_files,
        write_baseline=request.write_baseline,
        baseline=request.baseline,
        diff_base=request.diff_base,
        scan_paths=scan_paths,
        confirm=request.confirm,
        warn=warn,
    )
    return Prepared(config, scan_paths, options, tuple(usage_errors))


def _config(request: ScanRequest) -> Config:
    """The configuration file's settings (unless `--isolated`), the command line's over them,
    and the cache and jobs of the run."""
    try:
        if request.isolated:
            settings = None
        else:
            found = request.config_path or find_config(request.paths)
            settings = load_config_file(found) if found else None
        config = build_config(settings, request.overrides)
    except ConfigError as exc:
        raise RequestError(str(exc)) from None
    if not request.no_cache:
        from idxcheck.incremental.cache import default_cache_dir

        config = replace(config, cache_dir=str(default_cache_dir()))
    return replace(config, jobs=request.jobs)


def exit_code(result: ScanResult, config: Config) -> int:
    """1 for findings, per-file errors or (`--strict`) UNKNOWN verdicts, else 0."""
    failed = (
        bool(result.findings)
        or bool(result.errors)
        or (config.strict and any(n.verdict == Verdict.UNKNOWN for n in result.notes))
    )
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def report_of(outcome: Scan, config: Config) -> Report:
    """What every renderer is handed."""
    from idxcheck.report.context import Report, SourceCache

    result = outcome.result
    if result.mode_order:
        mode_order = result.mode_order
    else:
        from idxcheck.profiles.schema import load_profile

        mode_order = load_profile(config.profile).mode_members
    return Report(
        result=result,
        suppressed=tuple((s.finding, s.comment) for s in outcome.suppressed),
        baselined=outcome.baselined,
        ignored=outcome.ignored,
        exit_code=exit_code(result, config),
        strict=config.strict,
        baseline_used=outcome.baseline_used,
        stale_baseline=outcome.stale_baseline,
        mode_order=mode_order,
        sources=SourceCache(outcome.texts),
    )
