"""`idxcheck rule CODE` and `idxcheck rules`: the rules' documentation, from one source."""

from __future__ import annotations

import json

import click

from idxcheck.cli.main import main


@main.command()
@click.argument("code")
def rule(code: str) -> None:
    """Show the documentation of one rule (by code or name)."""
    from idxcheck.rules.catalog import lookup

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
    from idxcheck.rules.catalog import catalogue, markdown_table

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
