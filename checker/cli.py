"""The command line: `idxcheck scan`, `idxcheck rule`, `idxcheck rules`.

Exit codes: 0 clean, 1 findings or per-file errors (and, with --strict, UNKNOWN verdicts),
2 usage or internal error. A traceback reaches the user only with --debug."""

from __future__ import annotations

import sys
import traceback
from typing import NoReturn

import click

from idxcheck import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # an internal error: one line, unless --debug
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            else:
                click.echo(f"idxcheck: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
            ctx.exit(EXIT_ERROR)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="idxcheck")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Prove that attention-backend index pointers and grid sizes agree with the runtime's
    token layout, in every forward mode and speculative configuration."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report to a file.")
@click.option("--select", multiple=True, metavar="CODE", help="Only these rules (repeatable).")
@click.option("--ignore", multiple=True, metavar="CODE", help="Skip these rules (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching this glob (repeatable).")
@click.option("--profile", default="sglang", show_default=True, help="Project profile.")
@click.option("--domain", multiple=True, metavar="EXPR", help="Extra domain constraint, e.g. 'speculative_eagle_topk == 1'.")
@click.option("--rlimit", type=click.IntRange(min=1), default=None, help="Solver resource limit per query (deterministic).")
@click.option("--strict", is_flag=True, help="Also fail on UNKNOWN verdicts (solver gave up).")
@click.option("--explain", is_flag=True, help="Show the chain behind each finding.")
def scan(
    paths: tuple[str, ...],
    output_format: str,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    profile: str,
    domain: tuple[str, ...],
    rlimit: int | None,
    strict: bool,
    explain: bool,
) -> None:
    """Scan files and folders (never imports or runs them)."""
    from idxcheck.config import Config
    from idxcheck.engine import scan as run_scan
    from idxcheck.report import json_format, text
    from idxcheck.rules import BY_CODE
    from idxcheck.sym.parse import ConstraintError
    from idxcheck.verdicts import Verdict

    for code in (*select, *ignore):
        if code not in BY_CODE:
            raise click.UsageError(f"unknown rule code {code!r} (see `idxcheck rules`)")
    kwargs: dict[str, object] = {}
    if rlimit is not None:
        kwargs["rlimit"] = rlimit
    config = Config(
        select=frozenset(select),
        ignore=frozenset(ignore),
        exclude=tuple(exclude),
        profile=profile,
        domain=tuple(domain),
        strict=strict,
        **kwargs,  # type: ignore[arg-type]
    )
    try:
        result = run_scan(list(paths), config)
    except (ValueError, ConstraintError) as exc:
        raise click.UsageError(str(exc)) from None
    if output_format == "json":
        rendered = json_format.render(result)
    else:
        rendered = text.render(result, explain=explain, strict=strict)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    else:
        click.echo(rendered, nl=False)
    failed = (
        bool(result.findings)
        or bool(result.errors)
        or (strict and any(n.verdict == Verdict.UNKNOWN for n in result.notes))
    )
    sys.exit(EXIT_FINDINGS if failed else EXIT_CLEAN)


@main.command()
@click.argument("code")
def rule(code: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    from idxcheck.rules import BY_CODE, BY_NAME

    found = BY_CODE.get(code.upper()) or BY_NAME.get(code)
    if found is None:
        raise click.UsageError(f"unknown rule {code!r} (see `idxcheck rules`)")
    click.echo(f"{found.code} {found.name} ({found.severity})\n")
    click.echo(found.doc())


@main.command()
def rules() -> None:
    """List the rules."""
    from idxcheck.rules import REGISTRY

    for found in REGISTRY:
        click.echo(f"{found.code}  {found.name:<28} {found.summary}")


def _fail(message: str) -> NoReturn:
    click.echo(f"idxcheck: {message}", err=True)
    sys.exit(EXIT_ERROR)
