"""`idxcheck cache clear` and `idxcheck cache dir`."""

from __future__ import annotations

import click

from idxcheck.cli.main import main


@main.group()
def cache() -> None:
    """The cache of solver verdicts and scan results."""


@cache.command("clear")
def cache_clear() -> None:
    """Delete the cache."""
    from idxcheck.incremental.cache import clear, default_cache_dir

    directory = default_cache_dir()
    click.echo(f"{'removed' if clear(directory) else 'no cache in'} {directory}")


@cache.command("dir")
def cache_dir() -> None:
    """Print where the cache is."""
    from idxcheck.incremental.cache import default_cache_dir

    click.echo(str(default_cache_dir()))
