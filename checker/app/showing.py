"""`scan --show-settings` and `scan --show-files`: what a scan would run with and what it would
read, without scanning (as ruff's options of those names)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from idxcheck.app.config_file import COMMAND_LINE, DEFAULT, FROM_FILE, Setting
from idxcheck.app.scanning import discover_files
from idxcheck.model.config import Config

# The keys whose values are TOML tables.
TABLES = frozenset({"per-file-ignores", "widths"})


@dataclass(frozen=True)
class ShownFiles:
    """The files a scan reads, as reports name them, and those the walk found but a scan
    would not read (path, why): links out of the scanned paths, files over `max-file-bytes`."""

    files: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


def shown_files(paths: Sequence[str], config: Config) -> ShownFiles:
    """What `idxcheck scan PATHS` reads with `config`: the walk with both kinds of excludes
    and the link policy, less the files over the size limit."""
    from idxcheck.source.files import too_large

    candidates, errors = discover_files(paths, config)
    files: list[str] = []
    skipped = [(error.path, error.message) for error in errors]
    for candidate in candidates:
        size = candidate.stamp[0]
        if size > config.max_file_bytes:
            skipped.append((candidate.display, too_large(size, config.max_file_bytes)))
        else:
            files.append(candidate.display)
    return ShownFiles(tuple(files), tuple(skipped))


def settings_text(
    paths: Sequence[str], paths_given: bool, settings: Sequence[Setting], config_file: str | None
) -> str:
    """The resolved settings, one `key = value  # origin` line each: the origin is `default`,
    the configuration file's path, `command line`, or the environment variable that set it."""
    rows: list[tuple[str, object, str]] = [
        ("paths", list(paths), COMMAND_LINE if paths_given else DEFAULT)
    ]
    for setting in settings:
        origin = setting.origin
        if origin == FROM_FILE and config_file:
            origin = config_file
        value = setting.value
        if setting.key in TABLES and not value:
            value = {}
        rows.append((setting.key, value, origin))
    width = max(len(f"{key} = {_value(value)}") for key, value, _origin in rows)
    lines = [f"# configuration file: {config_file or '(none)'}"]
    for key, value, origin in rows:
        line = f"{key} = {_value(value)}"
        lines.append(f"{line:<{width}}  # {origin}")
    return "\n".join(lines) + "\n"


def _value(value: object) -> str:
    """A setting as TOML writes it (an inline table for pairs), `none` for an absent one."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list, frozenset)):
        items = sorted(value) if isinstance(value, frozenset) else list(value)
        if items and all(isinstance(i, tuple) and len(i) == 2 for i in items):
            pairs = ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in items)
            return "{ " + pairs + " }" if pairs else "{}"
        return "[" + ", ".join(_value(i) for i in items) + "]"
    if isinstance(value, dict):
        return _value(tuple(value.items())) if value else "{}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)
