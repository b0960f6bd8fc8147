"""`idxcheck scan`: its options, handed to the application (`idxcheck.app.command`); the reports
it renders written to standard output or files."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import click

from idxcheck import memo
from idxcheck.cli.main import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    FORMAT_MODULES,
    PROGRESS_MIN_FILES,
    echo,
    fail,
    main,
    parse_formats,
    progress_bar,
    tell,
    use_color,
    validate_codes,
    warn,
    write,
)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--format",
    "--output-format",
    "formats",
    multiple=True,
    metavar="FORMAT[=FILE]",
    help="Report format, repeatable: text, concise, json, sarif, github, markdown, junit, "
    "html. FORMAT=FILE writes to FILE; at most one format goes to stdout.  [default: text]",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the format given without =FILE to this file.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Read this TOML file instead of searching for [tool.idxcheck].",
)
@click.option("--isolated", is_flag=True, help="Ignore configuration files.")
@click.option(
    "--no-cache",
    is_flag=True,
    help="Neither read nor write the cache of verdicts and results ($IDXCHECK_CACHE_DIR, else ~/.cache/idxcheck).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes for the analysis (0: one per CPU, up to 4, when the scan is large enough). The result is the same for any number at the default --rlimit.",
)
@click.option("--select", multiple=True, metavar="CODE", help="Only these rules (repeatable).")
@click.option("--ignore", multiple=True, metavar="CODE", help="Skip these rules (repeatable).")
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip paths matching this glob (repeatable)."
)
@click.option(
    "--profile",
    default=None,
    help="Project profile: a profile's name (docs/profiles.md), or auto: a file inside a package "
    "a profile claims (vllm/ for vLLM) takes that profile, any other the default (sglang).  "
    "[default: auto]",
)
@click.option(
    "--domain",
    multiple=True,
    metavar="EXPR",
    help="Extra domain constraint, e.g. 'speculative_eagle_topk == 1'.",
)
@click.option(
    "--rlimit",
    type=click.IntRange(min=1),
    default=None,
    help="Solver resource limit per query (deterministic).",
)
@click.option(
    "--strict/--no-strict",
    default=None,
    help="Also fail on UNKNOWN verdicts (solver gave up) and unused suppressions (IDX901).",
)
@click.option("--explain", is_flag=True, help="Show the chain behind each finding.")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Text and concise reports: the findings and per-file errors only (no notes, no "
    "summary); no progress bar.",
)
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 even when there are findings or per-file errors (2 still means a usage or "
    "internal error).",
)
@click.option(
    "--show-unsupported",
    is_flag=True,
    help="Text and concise reports: list each UNSUPPORTED site with the reason.",
)
@click.option(
    "--add-suppressions",
    is_flag=True,
    help="Write a `# idxcheck: ignore[CODE]` comment for each finding reported, instead of "
    "the report.",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Text report: count findings per rule and forward mode instead of listing them.",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the text report.",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False),
    help="Report only findings not recorded in this baseline file.",
)
@click.option(
    "--write-baseline",
    "write_baseline_path",
    type=click.Path(dir_okay=False),
    help="Record the current findings in this baseline file.",
)
@click.option(
    "--diff-base",
    metavar="REF",
    help="Report only findings not present when the same paths are scanned at git REF.",
)
@click.option(
    "--changed-only",
    is_flag=True,
    help="PATHS are changed files: scan the whole project, report findings that touch them.",
)
@click.option(
    "--fix",
    "apply_fix",
    is_flag=True,
    help="Apply the fixes findings carry (unsafe: each rewrites a flagged expression as the "
    "backend attribute that holds the runtime's width, in code idxcheck never ran; review "
    "the diff), then scan again and report what remains.",
)
@click.option(
    "--confirm",
    is_flag=True,
    help="Replay each finding's counterexample on a Triton kernel (needs the runtime extra).",
)
@click.option(
    "--kernel",
    metavar="MODULE:FUNCTION",
    help="With --confirm: replay with this kernel instead of ours. MODULE is imported and "
    "FUNCTION run (the scanned code never is): name only code you trust. MODULE may be a .py "
    "file; one in a vLLM source tree runs with stand-ins for the rest of vLLM.",
)
@click.option(
    "--kernel-adapter",
    type=click.Choice(["sglang", "idxcheck", "vllm"]),
    default=None,
    help="With --kernel: its calling convention (guessed when omitted).",
)
@click.option(
    "--emit-test",
    "emit_test",
    type=click.Path(file_okay=False),
    help="With --confirm: write a regression test per confirmed finding here.",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    metavar="auto|cpu|cuda[:N]",
    help="With --confirm: where to replay.",
)
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the resolved settings and where each came from (default, the configuration "
    "file, the command line), and exit without scanning.",
)
@click.option(
    "--show-files",
    is_flag=True,
    help="Print the files the scan would read, one per line, and exit without scanning.",
)
@click.pass_context
# Longer than a function should be only by its signature: one parameter per option of `scan`.
def scan(
    ctx: click.Context,
    paths: tuple[str, ...],
    formats: tuple[str, ...],
    output: str | None,
    config_path: str | None,
    isolated: bool,
    no_cache: bool,
    jobs: int,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    profile: str | None,
    domain: tuple[str, ...],
    rlimit: int | None,
    strict: bool | None,
    explain: bool,
    quiet: bool,
    exit_zero: bool,
    show_unsupported: bool,
    add_suppressions: bool,
    statistics: bool,
    color: str,
    baseline_path: str | None,
    write_baseline_path: str | None,
    diff_base: str | None,
    changed_only: bool,
    apply_fix: bool,
    confirm: bool,
    kernel: str | None,
    kernel_adapter: str | None,
    emit_test: str | None,
    device: str,
    show_settings: bool,
    show_files: bool,
) -> None:
    """Scan files and folders (never imports or runs them); the current folder without PATHS."""
    from idxcheck.app import api
    from idxcheck.app.command import RequestError, ScanRequest, prepare, report_of
    from idxcheck.app.config_file import Overrides
    from idxcheck.app.outfile import OutputError
    from idxcheck.app.policy import apply_policy

    outputs = parse_formats(formats, output)
    paths_given = bool(paths)
    if show_settings and show_files:
        raise click.UsageError("--show-settings and --show-files are exclusive")
    if not paths:
        if changed_only:
            raise click.UsageError("--changed-only needs the changed files as PATHS")
        paths = (".",)
    if add_suppressions and (write_baseline_path or confirm):
        raise click.UsageError(
            "--add-suppressions goes with neither --write-baseline nor --confirm"
        )
    validate_codes(select, "--select")
    validate_codes(ignore, "--ignore")
    if (kernel or emit_test or kernel_adapter) and not confirm:
        raise click.UsageError("--kernel, --kernel-adapter and --emit-test need --confirm")
    confirming = None
    if confirm:
        from idxcheck.app.confirming import ConfirmOptions

        confirming = ConfirmOptions(kernel, kernel_adapter, device, emit_test)
    request = ScanRequest(
        paths=paths,
        overrides=Overrides(select, ignore, exclude, profile, domain, rlimit, strict),
        config_path=config_path,
        isolated=isolated,
        no_cache=no_cache,
        jobs=jobs,
        baseline=baseline_path,
        write_baseline=write_baseline_path,
        diff_base=diff_base,
        changed_only=changed_only,
        confirm=confirming,
    )
    try:
        prepared = prepare(request, warn)
    except RequestError as exc:
        raise click.UsageError(str(exc)) from None
    config = prepared.config
    if show_settings or show_files:
        ctx.exit(_show(prepared, paths, paths_given, show_settings))
    started = time.time()
    try:
        with progress_bar("scanning", PROGRESS_MIN_FILES, shown=not quiet) as progress:
            unfiltered = api.scanned(prepared.scan_paths, config, progress=progress)
        with progress_bar("confirming", 1, shown=not quiet) as progress:
            outcome = apply_policy(unfiltered, config, prepared.options, progress)
        if apply_fix:
            outcome = _fixed(outcome, prepared, config)
    except prepared.usage_errors as exc:
        raise click.UsageError(str(exc)) from None
    except OutputError as exc:  # the baseline could not be written
        fail(str(exc))
    if add_suppressions:
        ctx.exit(_add_suppressions(outcome, quiet))
    if write_baseline_path and not quiet:
        click.echo(
            f"idxcheck: wrote {len(outcome.baselined)} findings to {write_baseline_path}",
            err=True,
        )
    # A plain scan whose whole effect is one report on standard output may be answered next
    # time from the memo (`idxcheck.memo`): rendered with the scan's time cut out.
    answerable = (
        memo.armed()
        and config.cache_dir is not None
        and len(outputs) == 1
        and outputs[0][1] is None
        and outputs[0][0] in memo.ANSWERED_FORMATS
        and not outcome.result.errors
        and not (apply_fix or confirm or write_baseline_path or baseline_path or diff_base)
        and not changed_only
    )
    seconds = outcome.result.stats.seconds
    if answerable:
        outcome = _timed(outcome, memo.SECONDS_SENTINEL)
    report = report_of(outcome, config, exit_zero, links=any(n == "sarif" for n, _ in outputs))
    options = TextOptions(explain, statistics, quiet, show_unsupported)
    for name, path in outputs:
        colored = name in TEXT_FORMATS and (
            use_color(color, sys.stdout) if path is None else color == "always"
        )
        rendered = render(name, report, options, color=colored)
        parts = memo.split(rendered) if answerable else [rendered]
        rendered = memo.fill(parts, memo.TIME_FORMATS.get(name, "none"), seconds)
        if path is None:
            echo(rendered, colored)
        else:
            write(path, rendered)
        if answerable:
            inputs = _configuration_files(paths, config_path, isolated)
            memo.store(parts, name, report.exit_code, inputs, started)
    ctx.exit(report.exit_code)


def _timed(outcome: Any, seconds: float) -> Any:
    from dataclasses import replace

    stats = replace(outcome.result.stats, seconds=seconds)
    return replace(outcome, result=replace(outcome.result, stats=stats))


def _configuration_files(
    paths: tuple[str, ...], config_path: str | None, isolated: bool
) -> list[str]:
    """Where the configuration was or could have been read: the file `--config` names, else
    every pyproject.toml from the folder that holds the scanned paths up (one made there would
    be read next time)."""
    if isolated:
        return []
    if config_path is not None:
        return [os.path.abspath(config_path)]
    from idxcheck.app.config_file import common_folder

    found: list[str] = []
    folder = os.path.abspath(common_folder(paths))
    while True:
        found.append(os.path.join(folder, "pyproject.toml"))
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def _show(prepared: Any, paths: tuple[str, ...], paths_given: bool, settings: bool) -> int:
    """`--show-settings` or `--show-files`: what the scan would run with or read, exit 0. The
    files the walk found but a scan would not read are said on stderr."""
    from idxcheck.app.showing import settings_text, shown_files
    from idxcheck.report.escape import display

    if settings:
        echo(settings_text(paths, paths_given, prepared.settings, prepared.config_file))
        return EXIT_CLEAN
    shown = shown_files(prepared.scan_paths, prepared.config)
    echo("".join(f"{display(path)}\n" for path in shown.files))
    for path, why in shown.skipped:
        warn(f"{display(path)}: not read: {why}")
    return EXIT_CLEAN


def _add_suppressions(outcome: Any, quiet: bool) -> int:
    """Comments written for the reported findings, and what was done said on stderr (each
    finding left unmarked, and the count unless `quiet`): exit 0, or 1 where a finding could
    not be marked."""
    from idxcheck.app.add_suppressions import add_suppressions
    from idxcheck.report.escape import display
    from idxcheck.rules.meta import META_RULES

    meta = frozenset(rule.code for rule in META_RULES)
    added = add_suppressions(outcome.result.findings, outcome.texts, meta)
    for finding, why in added.skipped:
        span = finding.span
        warn(f"{display(span.path)}:{span.line}: {finding.code} not suppressed: {why}")
    noun = "finding" if added.suppressed == 1 else "findings"
    files = "file" if len(added.files) == 1 else "files"
    if not quiet:
        tell(
            f"idxcheck: suppressed {added.suppressed} {noun} with comments in "
            f"{len(added.files)} {files}"
        )
    return EXIT_FINDINGS if added.skipped else EXIT_CLEAN


@dataclass(frozen=True)
class TextOptions:
    """What the text-like reports are asked for beyond the report."""

    explain: bool = False
    statistics: bool = False
    quiet: bool = False
    show_unsupported: bool = False


# The formats that `--color`, `--quiet` and `--show-unsupported` apply to.
TEXT_FORMATS = frozenset({"text", "concise"})


def _fixed(outcome: Any, prepared: Any, config: Any) -> Any:
    """`--fix`: the reported findings' fixes written into their files, then the scan again
    (what it reports is what remains)."""
    from idxcheck.app import api
    from idxcheck.app.fixes import apply_fixes
    from idxcheck.app.policy import apply_policy

    applied = apply_fixes(outcome.result.findings)
    for reason in applied.skipped:
        warn(f"fix not applied: {reason}")
    files = len(applied.files)
    click.echo(
        f"idxcheck: applied {applied.count} fix{'es' if applied.count != 1 else ''} in "
        f"{files} file{'s' if files != 1 else ''}",
        err=True,
    )
    if not applied.count:
        return outcome
    with progress_bar("scanning", PROGRESS_MIN_FILES) as progress:
        unfiltered = api.scanned(prepared.scan_paths, config, progress=progress)
    with progress_bar("confirming", 1) as progress:
        return apply_policy(unfiltered, config, prepared.options, progress)


def render(name: str, report: Any, options: TextOptions | None = None, color: bool = False) -> str:
    import importlib

    options = options or TextOptions()
    # Only the chosen format's module: the HTML and SARIF reporters load the rule catalogue.
    module = importlib.import_module(f"idxcheck.report.{FORMAT_MODULES[name]}")
    if name == "text":
        return module.render(  # type: ignore[no-any-return]
            report,
            explain=options.explain,
            color=color,
            statistics=options.statistics,
            quiet=options.quiet,
            show_unsupported=options.show_unsupported,
        )
    if name == "concise":
        return module.render(  # type: ignore[no-any-return]
            report, color=color, quiet=options.quiet, show_unsupported=options.show_unsupported
        )
    return module.render(report)  # type: ignore[no-any-return]
