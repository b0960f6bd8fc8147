"""`idxcheck symbols`: the configuration symbols of a profile (those a `--domain` constraint or
a width may name), each with its short name, what sets it (the profile's `LAUNCH_SETTINGS`: a
server flag, an environment variable, a model or runtime property) and the domain constraints
that bound it, the configuration file's included."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from idxcheck.cli.main import echo, main

if TYPE_CHECKING:
    from idxcheck.profiles.schema import Profile

# What a launch setting is, by its spelling (as `check.launch` reads them).
FLAG = "flag"
ENVIRONMENT = "environment"
MODEL = "model"
RUNTIME = "runtime"


@dataclass(frozen=True)
class SetBy:
    kind: str  # FLAG, ENVIRONMENT, MODEL or RUNTIME
    text: str  # `{}` stands for the value


@dataclass(frozen=True)
class Bound:
    constraint: str
    why: str


@dataclass(frozen=True)
class SymbolInfo:
    name: str
    display: str
    set_by: tuple[SetBy, ...]
    bounds: tuple[Bound, ...]


def setting_kind(text: str) -> tuple[str, str]:
    """(kind, text without its `model: ` / `runtime: ` prefix) of one launch setting."""
    for prefix, kind in (("model: ", MODEL), ("runtime: ", RUNTIME)):
        if text.startswith(prefix):
            return kind, text[len(prefix) :]
    if text.startswith("-"):
        return FLAG, text
    if "=" in text.split(" ", 1)[0]:
        return ENVIRONMENT, text
    return RUNTIME, text


def symbol_infos(profile: Profile) -> tuple[SymbolInfo, ...]:
    """The profile's configuration symbols in its display order."""
    from idxcheck.sym.terms import formula_symbols

    mentioned = [(c, formula_symbols(c.formula)) for c in profile.domain]
    infos = []
    for name in profile.symbol_order():
        set_by = tuple(SetBy(*setting_kind(s)) for s in profile.launch.settings.get(name, ()))
        bounds = tuple(Bound(c.text, c.why) for c, names in mentioned if name in names)
        infos.append(SymbolInfo(name, profile.display[name], set_by, bounds))
    return tuple(infos)


def render_text(profile: Profile, infos: tuple[SymbolInfo, ...]) -> str:
    lines = [f"profile {profile.name}: {len(infos)} configuration symbols", ""]
    for info in infos:
        short = f" ({info.display})" if info.display != info.name else ""
        lines.append(f"{info.name}{short}")
        if not info.set_by:
            lines.append("  set by: (no launch setting known)")
        for setting in info.set_by:
            lines.append(f"  set by {setting.kind}: {setting.text.replace('{}', 'N')}")
        for bound in info.bounds:
            lines.append(f"  bound: {bound.constraint}  ({bound.why})")
        lines.append("")
    return "\n".join(lines)


def render_json(profile: Profile, infos: tuple[SymbolInfo, ...]) -> str:
    doc = {
        "profile": profile.name,
        "symbols": [
            {
                "name": info.name,
                "display": info.display,
                "set_by": [{"kind": s.kind, "text": s.text} for s in info.set_by],
                "bounds": [{"constraint": b.constraint, "why": b.why} for b in info.bounds],
            }
            for info in infos
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


@main.command()
@click.argument("path", required=False, default=".", type=click.Path())
@click.option(
    "--profile",
    default=None,
    help="Profile by name (docs/profiles.md).  [default: the one `scan PATH` uses: the "
    "configuration file's, else by PATH's package (a package a profile claims, else sglang)]",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="Read this TOML file instead of searching for [tool.idxcheck] (its domain is shown too).",
)
@click.option("--isolated", is_flag=True, help="Ignore configuration files.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def symbols(
    path: str, profile: str | None, config_path: str | None, isolated: bool, output_format: str
) -> None:
    """List a profile's configuration symbols: their short names, the server flags, environment
    variables or model properties that set them, and the domain constraints that bound them."""
    from idxcheck.app.command import resolve_config
    from idxcheck.app.config_file import ConfigError, Overrides
    from idxcheck.app.selection import AUTO, profile_of_path
    from idxcheck.profiles.schema import load_profile

    try:
        resolved = resolve_config(
            (path,), Overrides(profile=profile), config_path, isolated, no_cache=True
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    config = resolved.config
    name = profile_of_path(path) if config.profile == AUTO else config.profile
    chosen = load_profile(name, {"domain": list(config.domain)})
    infos = symbol_infos(chosen)
    echo(render_json(chosen, infos) if output_format == "json" else render_text(chosen, infos))
