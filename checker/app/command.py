"""`idxcheck scan` as the application runs it: the configuration (files, then the command
line), the policy's options (`--changed-only`, baselines, `--diff-base`, confirmation), the exit
code, and the report. The click command only parses options, draws progress and writes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from idxcheck.app.config_file import (
    ConfigError,
    Overrides,
    Setting,
    common_folder,
    find_config,
    load_config_file,
    resolve,
)
from idxcheck.app.policy import PolicyOptions
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.model.kinds import Severity
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
    # Where each setting came from, and the configuration file read (None: none).
    settings: tuple[Setting, ...] = ()
    config_file: str | None = None


def prepare(request: ScanRequest, warn: Callable[[str], None]) -> Prepared:
    """The request resolved, or RequestError naming what is wrong with it."""
    if request.baseline and request.write_baseline:
        raise RequestError("--baseline and --write-baseline are exclusive")
    if request.diff_base is not None and not request.diff_base.strip():
        raise RequestError(
            "--diff-base needs a git ref (a branch, tag or commit), not an empty one"
        )
    resolved = _resolved(request)
    config = resolved.config
    from idxcheck.app.docs_url import DocsUrlError, docs_url

    try:
        docs_url(project_urls=())  # a bad $IDXCHECK_DOCS_URL fails before the scan
    except DocsUrlError as exc:
        raise RequestError(str(exc)) from None
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
    if request.diff_base:
        from idxcheck.app import gitutil

        try:
            check_diff_base(request.diff_base, scan_paths)
        except gitutil.GitError as exc:
            raise RequestError(str(exc)) from None
    options = PolicyOptions(
        changed=changed_files,
        write_baseline=request.write_baseline,
        baseline=request.baseline,
        diff_base=request.diff_base,
        scan_paths=scan_paths,
        confirm=request.confirm,
        warn=warn,
    )
    return Prepared(
        config, scan_paths, options, tuple(usage_errors), resolved.settings, resolved.file
    )


def check_diff_base(ref: str, paths: Sequence[str]) -> str:
    """The commit `ref` names in the repository of `paths`, or `gitutil.GitError` saying why
    there is none: found before the scan, which a `--diff-base` scan compares with it after."""
    from idxcheck.app import gitutil

    start = common_folder(paths)
    top = gitutil.toplevel(start)
    if top is None:
        raise gitutil.GitError(f"--diff-base needs a git repository; {start} is not in one")
    try:
        commit = gitutil.resolve_commit(top, ref)
    except gitutil.GitError as exc:
        raise gitutil.GitError(f"--diff-base: {exc}") from None
    for path in paths:
        if os.path.relpath(os.path.realpath(path), top).startswith(".."):
            raise gitutil.GitError(f"--diff-base: every scanned path must be inside {top}")
    return commit


@dataclass(frozen=True)
class Resolved:
    """A configuration as the CLI resolves it: the Config, the file read (None: none), and
    where each setting came from (`--show-settings`)."""

    config: Config
    file: str | None
    settings: tuple[Setting, ...]


def resolve_config(
    paths: Sequence[str],
    overrides: Overrides | None = None,
    config_path: str | None = None,
    isolated: bool = False,
    no_cache: bool = False,
    jobs: int = 0,
) -> Resolved:
    """The configuration file's settings (`config_path`, else the `[tool.idxcheck]` found
    upward from `paths`; none when `isolated`), the command line's over them, and the cache
    (the default folder unless `no_cache`) and jobs of the run. ConfigError names a mistake."""
    found = None if isolated else (config_path or find_config(paths))
    settings = load_config_file(found) if found else None
    config, chosen = resolve(settings, overrides or Overrides())
    cache: str | None = None
    if not no_cache:
        from idxcheck.incremental.cache import default_cache_dir

        cache = str(default_cache_dir())
    config = replace(config, cache_dir=cache, jobs=jobs)
    run = (
        Setting("cache", cache, _cache_origin(no_cache)),
        Setting("jobs", jobs, _jobs_origin(jobs)),
    )
    return Resolved(config, found, chosen + run)


def _cache_origin(no_cache: bool) -> str:
    if no_cache:
        return "command line"
    if os.environ.get("IDXCHECK_CACHE_DIR"):
        return "environment (IDXCHECK_CACHE_DIR)"
    if os.environ.get("XDG_CACHE_HOME"):
        return "environment (XDG_CACHE_HOME)"
    return "default"


def _jobs_origin(jobs: int) -> str:
    return "default" if jobs == 0 else "command line"


def _resolved(request: ScanRequest) -> Resolved:
    try:
        return resolve_config(
            request.paths,
            request.overrides,
            request.config_path,
            request.isolated,
            request.no_cache,
            request.jobs,
        )
    except ConfigError as exc:
        raise RequestError(str(exc)) from None


def exit_code(result: ScanResult, config: Config, exit_zero: bool = False) -> int:
    """1 for findings, per-file errors or (`--strict`) UNKNOWN verdicts, else 0; 0 whatever
    was found with `exit_zero` (`--exit-zero`). A finding of an advisory rule (an unused
    suppression, `rules.meta`) fails the run only under `--strict`; a note (a value nothing
    reads) fails nothing."""
    from idxcheck.rules.meta import advisory_codes

    advisory = frozenset() if config.strict else advisory_codes()
    failed = (
        any(f.code not in advisory and f.severity != Severity.NOTE for f in result.findings)
        or bool(result.errors)
        or (config.strict and any(n.verdict == Verdict.UNKNOWN for n in result.notes))
    )
    return EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN


def report_of(outcome: Scan, config: Config, exit_zero: bool = False, links: bool = True) -> Report:
    """What every renderer is handed; `links`: with the docs address the SARIF rules link
    (found through the installed package's metadata: a warm scan whose reports need no link
    skips that lookup)."""
    from idxcheck.app.docs_url import docs_url
    from idxcheck.report.context import Report, SourceCache

    result = outcome.result
    if result.mode_order:
        mode_order = result.mode_order
    else:
        from idxcheck.app.selection import AUTO, DEFAULT_PROFILE
        from idxcheck.profiles.schema import load_profile

        name = DEFAULT_PROFILE if config.profile == AUTO else config.profile
        mode_order = load_profile(name).mode_members
    return Report(
        result=result,
        suppressed=tuple((s.finding, s.comment) for s in outcome.suppressed),
        baselined=outcome.baselined,
        ignored=outcome.ignored,
        elsewhere=outcome.elsewhere,
        exit_code=exit_code(result, config, exit_zero),
        strict=config.strict,
        baseline_used=outcome.baseline_used,
        stale_baseline=outcome.stale_baseline,
        mode_order=mode_order,
        docs_url=docs_url() if links else "",
        sources=SourceCache(outcome.texts),
    )
