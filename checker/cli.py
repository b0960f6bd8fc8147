"""The command line: `idxcheck scan`, `idxcheck confirm`, `idxcheck rule`, `idxcheck rules`.

Exit codes: 0 clean, 1 findings or per-file errors (and, with --strict, UNKNOWN verdicts),
2 usage or internal error (a bad configuration file included), 130 interrupted (Ctrl-C). A
traceback reaches the user only with --debug."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from dataclasses import replace as _replace
from typing import IO, Any, NoReturn

import click

from idxcheck import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended

FORMAT_MODULES = {
    "text": "text",
    "json": "json_format",
    "sarif": "sarif",
    "github": "github",
    "markdown": "markdown",
    "junit": "junit",
    "html": "html",
}
FORMATS = tuple(FORMAT_MODULES)
# A progress bar is worth drawing only for runs long enough to wonder about.
PROGRESS_MIN_FILES = 20


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:  # Ctrl-C, also during a solver check (`idxcheck.solve`)
            click.echo("idxcheck: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # an internal error: one line, unless --debug
            if ctx.obj and ctx.obj.get("debug"):
                import traceback

                traceback.print_exc()
            else:
                click.echo(
                    f"idxcheck: internal error: {type(exc).__name__}: {_describe(exc)} "
                    "(run with --debug for the traceback)",
                    err=True,
                )
            ctx.exit(EXIT_ERROR)


def _describe(exc: BaseException) -> str:
    """One line about an exception, even when its `str` itself fails (the repr of a deeply
    nested syntax tree recurses) or runs to pages."""
    try:
        text = str(exc)
    except Exception:
        return "(no description)"
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 300 else line[:297] + "..."


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="idxcheck")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Prove that attention-backend index pointers and grid sizes agree with the runtime's
    token layout, in every forward mode and speculative configuration."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


# ---------------------------------------------------------------------------------------------
# helpers


def parse_formats(specs: tuple[str, ...], output: str | None) -> list[tuple[str, str | None]]:
    """`--format NAME[=PATH]` (repeatable) -> [(name, path or None for stdout)]."""
    outputs: list[tuple[str, str | None]] = []
    for spec in specs or ("text",):
        name, sep, path = spec.partition("=")
        name = name.strip().lower()
        if name not in FORMATS:
            raise click.BadParameter(
                f"unknown format {name!r}; choose from {', '.join(FORMATS)}", param_hint="--format"
            )
        if sep and not path:
            raise click.BadParameter(
                f"{spec!r}: a file name must follow '='", param_hint="--format"
            )
        outputs.append((name, path or None))
    bare = [name for name, path in outputs if path is None]
    if len(bare) > 1:
        raise click.BadParameter(
            f"at most one format can go to standard output (got {', '.join(bare)}); "
            "give the others a file: --format sarif=idxcheck.sarif",
            param_hint="--format",
        )
    if output is not None:
        if not bare:
            raise click.BadParameter(
                "-o names the file of the format given without '=PATH'", param_hint="-o"
            )
        outputs = [(name, output if path is None else path) for name, path in outputs]
    return outputs


def use_color(choice: str, stream: IO[str]) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):  # https://no-color.org
        return False
    return _isatty(stream)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(label: str, minimum: int) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback drawing on stderr when it is a terminal, None otherwise: piped and CI
    output stays clean. The bar appears only once the total reaches `minimum`."""
    if not _isatty(sys.stderr):
        yield None
        return
    state: dict[str, Any] = {"bar": None, "done": 0}

    def update(done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None:
            if total < minimum:
                return
            bar = click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True)
            bar.__enter__()
            state["bar"] = bar
        bar.update(done - state["done"])
        state["done"] = done

    try:
        yield update
    finally:
        if state["bar"] is not None:
            state["bar"].__exit__(None, None, None)


def _write(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _validate_codes(codes: tuple[str, ...], option: str) -> None:
    if not codes:
        return  # the rule catalogue is not loaded for nothing
    from idxcheck.catalog import known_codes

    known = known_codes()
    for code in codes:
        if code not in known:
            raise click.BadParameter(
                f"unknown rule code {code!r} (see `idxcheck rules`)", param_hint=option
            )


# ---------------------------------------------------------------------------------------------
# scan


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "formats",
    multiple=True,
    metavar="FORMAT[=FILE]",
    help="Report format, repeatable: text, json, sarif, github, markdown, junit, html. "
    "FORMAT=FILE writes to FILE; at most one format goes to stdout.  [default: text]",
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
@click.option("--profile", default=None, help="Project profile.  [default: sglang]")
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
    "--strict/--no-strict", default=None, help="Also fail on UNKNOWN verdicts (solver gave up)."
)
@click.option("--explain", is_flag=True, help="Show the chain behind each finding.")
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
    "--confirm",
    is_flag=True,
    help="Replay each finding's counterexample on a Triton kernel (needs the runtime extra).",
)
@click.option(
    "--kernel",
    metavar="MODULE:FUNCTION",
    help="With --confirm: replay with this kernel instead of ours. MODULE is imported and "
    "FUNCTION run (the scanned code never is): name only code you trust.",
)
@click.option(
    "--kernel-adapter",
    type=click.Choice(["sglang", "idxcheck"]),
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
@click.pass_context
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
    statistics: bool,
    color: str,
    baseline_path: str | None,
    write_baseline_path: str | None,
    diff_base: str | None,
    changed_only: bool,
    confirm: bool,
    kernel: str | None,
    kernel_adapter: str | None,
    emit_test: str | None,
    device: str,
) -> None:
    """Scan files and folders (never imports or runs them)."""
    from idxcheck import api
    from idxcheck.config_file import (
        ConfigError,
        Overrides,
        build_config,
        find_config,
        load_config_file,
    )
    from idxcheck.report.context import Report
    from idxcheck.verdicts import Verdict

    outputs = parse_formats(formats, output)
    _validate_codes(select, "--select")
    _validate_codes(ignore, "--ignore")
    if (kernel or emit_test or kernel_adapter) and not confirm:
        raise click.UsageError("--kernel, --kernel-adapter and --emit-test need --confirm")
    if baseline_path and write_baseline_path:
        raise click.UsageError("--baseline and --write-baseline are exclusive")

    try:
        if isolated:
            settings = None
        else:
            found = config_path or find_config(paths)
            settings = load_config_file(found) if found else None
        config = build_config(
            settings,
            Overrides(select, ignore, exclude, profile, domain, rlimit, strict),
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if not no_cache:
        from idxcheck.cache import default_cache_dir

        config = _replace(config, cache_dir=str(default_cache_dir()))
    config = _replace(config, jobs=jobs)

    # What turns into a usage error (a bad domain constraint is a ValueError); git and baseline
    # support is loaded only by the options that use it.
    usage_errors: list[type[Exception]] = [ValueError]
    if baseline_path or write_baseline_path or diff_base:
        from idxcheck import baseline, gitutil

        usage_errors += [baseline.BaselineError, gitutil.GitError]
    changed_files = None
    scan_paths = list(paths)
    if changed_only:
        from idxcheck import changed, gitutil

        usage_errors.append(gitutil.GitError)
        changed_files = changed.ChangedFiles(paths)
        scan_paths = [changed.scan_path(changed.project_root(paths, config))]
        # Tree facts come from the whole project; classes are analysed only where a finding
        # could touch a changed file (the engine widens this to every class when a changed
        # file holds a runner, the mode enum or another tree fact).
        config = _replace(config, focus=tuple(paths))

    try:
        with progress_bar("scanning", PROGRESS_MIN_FILES) as progress:
            outcome = api.scan(scan_paths, config, progress=progress)
        result = outcome.result
        if changed_files is not None:
            result.findings = [
                f for f in result.findings if changed_files.touches(f, result.mode_model_source)
            ]
            result.errors = [e for e in result.errors if changed_files.holds_error(e)]
        baselined: list[Any] = []
        stale = 0
        baseline_used = False
        if write_baseline_path:
            baseline.write_baseline(write_baseline_path, result.findings)
            click.echo(
                f"idxcheck: wrote {len(result.findings)} findings to {write_baseline_path}",
                err=True,
            )
            baselined, result.findings = list(result.findings), []
            baseline_used = True
        if baseline_path:
            split = baseline.split(result.findings, baseline.load_baseline(baseline_path))
            result.findings, stale = list(split.new), split.stale
            baselined.extend(split.known)
            baseline_used = True
        if diff_base:
            split = baseline.split(
                result.findings, baseline.findings_at_ref(diff_base, scan_paths, config)
            )
            result.findings = list(split.new)
            baselined.extend(split.known)
            baseline_used = True
    except tuple(usage_errors) as exc:
        raise click.UsageError(str(exc)) from None

    if confirm and result.findings:
        from idxcheck.confirming import ConfirmOptions, confirm_document
        from idxcheck.report.json_format import to_dict

        options = ConfirmOptions(kernel, kernel_adapter, device, emit_test)
        with progress_bar("confirming", 1) as progress:
            doc = confirm_document(to_dict(result), options, progress)
        result.findings = [
            replace(f, confirmation=d.get("confirmation"))
            for f, d in zip(result.findings, doc["findings"], strict=True)
        ]

    failed = (
        bool(result.findings)
        or bool(result.errors)
        or (config.strict and any(n.verdict == Verdict.UNKNOWN for n in result.notes))
    )
    exit_code = EXIT_FINDINGS if failed else EXIT_CLEAN
    if result.mode_order:
        mode_order = result.mode_order
    else:
        from idxcheck.profile import load_profile

        mode_order = load_profile(config.profile).mode_members
    report = Report(
        result=result,
        suppressed=tuple((s.finding, s.comment) for s in outcome.suppressed),
        baselined=tuple(baselined),
        ignored=outcome.ignored,
        exit_code=exit_code,
        strict=config.strict,
        baseline_used=baseline_used,
        stale_baseline=stale,
        mode_order=mode_order,
    )
    for name, path in outputs:
        stream = sys.stdout
        colored = name == "text" and (
            use_color(color, stream) if path is None else color == "always"
        )
        rendered = render(name, report, explain=explain, statistics=statistics, color=colored)
        if path is None:
            click.echo(rendered, nl=False, color=colored)
        else:
            _write(path, rendered)
    ctx.exit(exit_code)


def render(
    name: str, report: Any, *, explain: bool = False, statistics: bool = False, color: bool = False
) -> str:
    import importlib

    # Only the chosen format's module: the HTML and SARIF reporters load the rule catalogue.
    module = importlib.import_module(f"idxcheck.report.{FORMAT_MODULES[name]}")
    if name == "text":
        return module.render(report, explain=explain, color=color, statistics=statistics)  # type: ignore[no-any-return]
    return module.render(report)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# confirm


@main.command("confirm")
@click.argument(
    "findings_file", metavar="FINDINGS.json", type=click.Path(dir_okay=False, allow_dash=True)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write here instead of back to FINDINGS.json ('-': stdout).",
)
@click.option(
    "--kernel",
    metavar="MODULE:FUNCTION",
    help="Replay with this kernel instead of ours. MODULE is imported and FUNCTION run: name "
    "only code you trust.",
)
@click.option(
    "--kernel-adapter",
    type=click.Choice(["sglang", "idxcheck"]),
    default=None,
    help="The kernel's calling convention (guessed when omitted).",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    metavar="auto|cpu|cuda[:N]",
    help="Where to replay.",
)
@click.option(
    "--emit-test",
    "emit_test",
    type=click.Path(file_okay=False),
    help="Write a regression test per confirmed finding here.",
)
@click.option(
    "--no-probe", is_flag=True, help="Skip the coverage probe (which row was computed as what)."
)
@click.option(
    "--dtype",
    type=click.Choice(["float32", "float16", "bfloat16"]),
    default=None,
    help="Replay dtype.",
)
def confirm_command(
    findings_file: str,
    output: str | None,
    kernel: str | None,
    kernel_adapter: str | None,
    device: str,
    emit_test: str | None,
    no_probe: bool,
    dtype: str | None,
) -> None:
    """Replay the findings of a JSON report (`scan --format json`) on a Triton kernel and
    record on each whether rows really go unwritten or wrong. Exit 1 when any is confirmed."""
    from idxcheck.confirming import (
        ConfirmOptions,
        ReportError,
        confirm_document,
        read_report,
        tally,
    )

    try:
        if findings_file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(findings_file, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise click.UsageError(f"cannot read {findings_file}: {exc.strerror or exc}") from None
    try:
        doc = read_report(data)
    except ReportError as exc:
        where = "the standard input" if findings_file == "-" else findings_file
        raise click.UsageError(f"{where} {exc}") from None
    options = ConfirmOptions(kernel, kernel_adapter, device, emit_test, not no_probe, dtype)
    try:
        with progress_bar("confirming", 1) as progress:
            out = confirm_document(doc, options, progress)
    except ValueError as exc:
        raise click.UsageError(f"{findings_file}: {exc}") from None
    rendered = json.dumps(out, indent=2) + "\n"
    target = output or findings_file
    if target == "-":
        click.echo(rendered, nl=False)
    else:
        _write(target, rendered)
    counts = tally(out)
    summary = (
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to replay"
    )
    click.echo(f"idxcheck confirm: {summary}", err=True)
    sys.exit(EXIT_FINDINGS if counts.get("confirmed") else EXIT_CLEAN)


# ---------------------------------------------------------------------------------------------
# rules


@main.command()
@click.argument("code")
def rule(code: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    from idxcheck.catalog import lookup

    found = lookup(code)
    if found is None:
        raise click.UsageError(f"unknown rule {code!r} (see `idxcheck rules`)")
    click.echo(f"{found.code} {found.name} ({found.severity})\n")
    click.echo(found.doc)


@main.command()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
def rules(output_format: str) -> None:
    """List the rules (markdown: the README's table)."""
    from idxcheck.catalog import catalogue, markdown_table

    if output_format == "markdown":
        click.echo(markdown_table(), nl=False)
        return
    if output_format == "json":
        doc = [
            {
                "code": r.code,
                "name": r.name,
                "severity": r.severity,
                "summary": r.summary,
                "doc": r.doc,
            }
            for r in catalogue()
        ]
        click.echo(json.dumps(doc, indent=2))
        return
    for found in catalogue():
        click.echo(f"{found.code}  {found.name:<28} {found.summary}")


def _fail(message: str) -> NoReturn:
    click.echo(f"idxcheck: {message}", err=True)
    sys.exit(EXIT_ERROR)


@main.group()
def cache() -> None:
    """The cache of solver verdicts and scan results."""


@cache.command("clear")
def cache_clear() -> None:
    """Delete the cache."""
    from idxcheck.cache import clear, default_cache_dir

    directory = default_cache_dir()
    click.echo(f"{'removed' if clear(directory) else 'no cache in'} {directory}")


@cache.command("dir")
def cache_dir() -> None:
    """Print where the cache is."""
    from idxcheck.cache import default_cache_dir

    click.echo(str(default_cache_dir()))


# The command's process collects cycles rarely, as its workers do
# (`idxcheck.workers.WORKER_GC_THRESHOLD`): what a scan allocates lives until its end (files,
# blocks, tree facts), so a collection of the young generation finds little to free, and at
# the default threshold of 700 they took 0.02 s of a 0.63 s pre-commit run.
COMMAND_GC_THRESHOLD = (500_000, 1_000, 1_000)
# Modules whose exit handlers must run: the runtime companion's (CUDA and Triton state).
_NEEDS_TEARDOWN = ("torch", "triton")


def entry() -> NoReturn:
    """The `idxcheck` command (and `python -m idxcheck`): `main`, then an exit that skips the
    interpreter's teardown once the output is flushed. Freeing every object of a scan one by
    one (the syntax trees, the solver's terms, libcst's and z3's modules) takes 0.04 s of a
    0.65 s pre-commit run; what must outlive the process is written already (the cache
    commits each statement). A run that loaded the runtime companion's modules exits the
    usual way, so that their exit handlers run."""
    import gc

    gc.set_threshold(*COMMAND_GC_THRESHOLD)
    try:
        main()
    except SystemExit as stop:
        status = stop.code
    else:
        status = 0
    if isinstance(status, int) and not any(name in sys.modules for name in _NEEDS_TEARDOWN):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or stream: the usual exit reports it as Python does
        else:
            os._exit(status)
    sys.exit(status)
