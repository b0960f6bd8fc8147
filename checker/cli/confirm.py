"""`idxcheck confirm`: replay the findings of a JSON report on a Triton kernel."""

from __future__ import annotations

import json
import sys

import click

from idxcheck.cli.main import EXIT_CLEAN, EXIT_FINDINGS, echo, main, progress_bar, write


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
    "only code you trust. MODULE may be a .py file; one in a vLLM source tree runs with "
    "stand-ins for the rest of vLLM.",
)
@click.option(
    "--kernel-adapter",
    type=click.Choice(["sglang", "idxcheck", "vllm"]),
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
    from idxcheck.app.confirming import (
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
        echo(rendered)
    else:
        write(target, rendered)
    counts = tally(out)
    summary = (
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to replay"
    )
    click.echo(f"idxcheck confirm: {summary}", err=True)
    sys.exit(EXIT_FINDINGS if counts.get("confirmed") else EXIT_CLEAN)
