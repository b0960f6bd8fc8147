"""`[tool.idxcheck]` in pyproject.toml: found upward from the scanned paths, or named with
`--config`. Unknown keys and bad values are errors that name the file, the key and what was
expected (the CLI turns them into exit code 2); flags given on the command line replace the
file's values key by key.

    [tool.idxcheck]
    select = ["IDX001", "IDX002"]
    ignore = []
    exclude = ["test", "python/sglang/srt/layers/attention/wave_ops"]
    per-file-ignores = { "python/sglang/srt/layers/attention/vision.py" = ["IDX002"] }
    profile = "sglang"
    domain = ["speculative_eagle_topk <= 8"]
    widths = { DRAFT_EXTEND_V2 = "speculative_num_draft_tokens" }
    rlimit = 2000000
    strict = false
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from idxcheck.app.selection import AUTO
from idxcheck.model.budget import DEFAULT_RLIMIT
from idxcheck.model.config import MAX_FILE_BYTES, Config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KEYS = (
    "select",
    "ignore",
    "exclude",
    "per-file-ignores",
    "profile",
    "domain",
    "widths",
    "rlimit",
    "strict",
    "max-file-bytes",
    "follow-links",
)


class ConfigError(Exception):
    """A configuration file that cannot be used, with a message for the user."""


@dataclass(frozen=True)
class FileSettings:
    """What one file says; None where it says nothing."""

    path: str
    root: str  # the folder holding the file: its globs are relative to it
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    profile: str | None = None
    domain: tuple[str, ...] | None = None
    widths: tuple[tuple[str, str], ...] | None = None
    rlimit: int | None = None
    strict: bool | None = None
    max_file_bytes: int | None = None
    follow_links: bool | None = None
    where: str = ""  # the file and its table, as messages name them


@dataclass(frozen=True)
class Overrides:
    """What the command line says; None (or empty for lists) where it says nothing."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    profile: str | None = None
    domain: tuple[str, ...] = ()
    rlimit: int | None = None
    strict: bool | None = None


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _section(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tool = doc.get("tool")
    if isinstance(tool, Mapping):
        section = tool.get("idxcheck")
        if isinstance(section, Mapping):
            return section
    return None


def find_config(paths: Sequence[str]) -> str | None:
    """The nearest pyproject.toml with a `[tool.idxcheck]` table, from the folder that holds all
    the scanned paths upward; a pyproject.toml without the table is passed over (a subproject
    may configure other tools only)."""
    start = common_folder(paths)
    folder = start
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and _section(_read_toml(candidate)) is not None:
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def common_folder(paths: Sequence[str]) -> str:
    folders = []
    for path in paths or ["."]:
        absolute = os.path.abspath(path)
        folders.append(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))
    return os.path.commonpath(folders)


def load_config_file(path: str) -> FileSettings:
    """Read `[tool.idxcheck]` of a pyproject.toml, or the top level of any other TOML file."""
    doc = _read_toml(path)
    section = _section(doc)
    if section is None:
        if os.path.basename(path) == "pyproject.toml":
            raise ConfigError(f"{path}: no [tool.idxcheck] table")
        section = doc
    where = f"{path}: [tool.idxcheck]" if _section(doc) is not None else path
    return parse_settings(section, path, where)


def parse_settings(section: Mapping[str, Any], path: str, where: str) -> FileSettings:
    unknown = [key for key in section if key not in KEYS]
    if unknown:
        key = unknown[0]
        import difflib

        close = difflib.get_close_matches(key.replace("_", "-"), KEYS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{where}: unknown key {key!r}{hint}; known keys: {', '.join(KEYS)}")
    codes: frozenset[str] = frozenset()
    if any(key in section for key in ("select", "ignore", "per-file-ignores")):
        from idxcheck.rules.catalog import known_codes  # loads the rules: only when codes are named

        codes = known_codes()

    def strings(key: str) -> tuple[str, ...] | None:
        if key not in section:
            return None
        value = section[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of strings, got {value!r}")
        return tuple(value)

    def rule_codes(key: str, value: Sequence[str]) -> tuple[str, ...]:
        for code in value:
            if code not in codes:
                raise ConfigError(
                    f"{where}: {key}: unknown rule code {code!r} (see `idxcheck rules`)"
                )
        return tuple(value)

    select = strings("select")
    ignore = strings("ignore")
    settings: dict[str, Any] = {
        "select": None if select is None else rule_codes("select", select),
        "ignore": None if ignore is None else rule_codes("ignore", ignore),
        "exclude": strings("exclude"),
        "domain": strings("domain"),
    }
    if "per-file-ignores" in section:
        settings["per_file_ignores"] = _per_file_ignores(
            section["per-file-ignores"], where, rule_codes
        )
    if "profile" in section:
        if not isinstance(section["profile"], str):
            raise ConfigError(f"{where}: profile must be a string, got {section['profile']!r}")
        settings["profile"] = section["profile"]
    if "widths" in section:
        settings["widths"] = _widths(section["widths"], where)
    for key, field in (("rlimit", "rlimit"), ("max-file-bytes", "max_file_bytes")):
        if key in section:
            settings[field] = _positive(section[key], key, where)
    for key, field in (("strict", "strict"), ("follow-links", "follow_links")):
        if key in section:
            if not isinstance(section[key], bool):
                raise ConfigError(f"{where}: {key} must be true or false, got {section[key]!r}")
            settings[field] = section[key]
    given = {k: v for k, v in settings.items() if v is not None}
    root = os.path.dirname(os.path.abspath(path))
    parsed = FileSettings(path=path, root=root, where=where, **given)
    _check_profile(parsed, where)
    return parsed


def _per_file_ignores(
    table: object, where: str, rule_codes: Callable[[str, Sequence[str]], tuple[str, ...]]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: per-file-ignores must be a table of glob = [codes]")
    pairs = []
    for glob, value in table.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{where}: per-file-ignores.{glob!r} must be a list of rule codes, got {value!r}"
            )
        pairs.append((str(glob), rule_codes(f"per-file-ignores.{glob!r}", value)))
    return tuple(pairs)


def _widths(table: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise ConfigError(
            f'{where}: widths must be a table of MODE = "width expression", got {table!r}'
        )
    return tuple(sorted(table.items()))


def _positive(value: object, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def _check_profile(settings: FileSettings, where: str) -> None:
    """Parse the profile, domain and widths now, so that a mistake names the file and key."""
    name = "sglang" if settings.profile is None else settings.profile
    _check_constraints(
        name,
        f"{where}: profile",
        [(text, f"{where}: domain") for text in settings.domain or ()],
        [(mode, text, f"{where}: widths") for mode, text in settings.widths or ()],
    )


def _check_constraints(
    name: str,
    profile_label: str,
    domain: Sequence[tuple[str, str]],
    widths: Sequence[tuple[str, str, str]],
) -> None:
    """The profile `name` exists, and each (text, label) of `domain` and (mode, text, label)
    of `widths` parses over its symbols; else a ConfigError that starts with the label."""
    from idxcheck.profiles.schema import load_profile
    from idxcheck.sym.parse import ConstraintError

    if name == AUTO:
        if domain or widths:
            raise ConfigError(
                f"{profile_label}: {AUTO!r} picks a profile per file, but a domain or widths "
                "are written in one profile's symbols: name that profile"
            )
        return
    try:
        profile = load_profile(name)
    except ValueError as exc:
        raise ConfigError(f"{profile_label}: {exc}") from None
    for text, label in domain:
        try:
            load_profile(name, {"domain": [text]})
        except ConstraintError as exc:
            raise ConfigError(f"{label}: {exc}") from None
    for mode, text, label in widths:
        if mode not in profile.mode_members:
            raise ConfigError(
                f"{label}: unknown forward mode {mode!r}; modes of the "
                f"{name} profile: {', '.join(profile.mode_members)}"
            )
        try:
            load_profile(name, {"widths": {mode: text}})
        except ConstraintError as exc:
            raise ConfigError(f"{label}.{mode}: {exc}") from None


# Where a resolved setting came from.
DEFAULT = "default"
FROM_FILE = "file"
COMMAND_LINE = "command line"


@dataclass(frozen=True)
class Setting:
    """One resolved setting: its key as `[tool.idxcheck]` spells it, its value, and whether
    the default, the file or the command line gave it."""

    key: str
    value: object
    origin: str


def build_config(settings: FileSettings | None, cli: Overrides) -> Config:
    """The scan's Config: the file's values, each replaced by the flag when one was given."""
    return resolve(settings, cli)[0]


def resolve(settings: FileSettings | None, cli: Overrides) -> tuple[Config, tuple[Setting, ...]]:
    """The scan's Config and where each of its settings came from. The profile, domain and
    widths are checked together (a flag's profile may not be the file's): a mistake is a
    ConfigError that names the flag, or the file and key."""
    file = settings or FileSettings(path="", root=os.getcwd())
    chosen: list[Setting] = []

    def pick(key: str, flag: Any, given: bool, in_file: Any, default: Any) -> Any:
        if given:
            chosen.append(Setting(key, flag, COMMAND_LINE))
            return flag
        if in_file is not None:
            chosen.append(Setting(key, in_file, FROM_FILE))
            return in_file
        chosen.append(Setting(key, default, DEFAULT))
        return default

    select = pick("select", cli.select, bool(cli.select), file.select, ())
    ignore = pick("ignore", cli.ignore, bool(cli.ignore), file.ignore, ())
    # CLI excludes are globs on the paths as typed; the file's are anchored at its folder.
    pick("exclude", cli.exclude, bool(cli.exclude), file.exclude, ())
    rooted_exclude = () if cli.exclude else (file.exclude or ())
    per_file_ignores = pick("per-file-ignores", None, False, file.per_file_ignores, ())
    # No profile named: each file's own (`app.selection`), but for a domain or widths, which
    # are written in the default profile's symbols.
    constrained = bool(cli.domain or file.domain or file.widths)
    profile = pick(
        "profile", cli.profile, bool(cli.profile), file.profile, "sglang" if constrained else AUTO
    )
    domain = pick("domain", cli.domain, bool(cli.domain), file.domain, ())
    widths = pick("widths", None, False, file.widths, ())
    rlimit = pick("rlimit", cli.rlimit, cli.rlimit is not None, file.rlimit, DEFAULT_RLIMIT)
    strict = pick("strict", cli.strict, cli.strict is not None, file.strict, False)
    max_bytes = pick("max-file-bytes", None, False, file.max_file_bytes, MAX_FILE_BYTES)
    follow_links = pick("follow-links", None, False, file.follow_links, False)
    # The file's own values were checked against its profile when it was read.
    if cli.profile or cli.domain:
        where = file.where or file.path
        _check_constraints(
            profile,
            "--profile" if cli.profile else f"{where}: profile",
            [(t, "--domain" if cli.domain else f"{where}: domain") for t in domain],
            [(mode, text, f"{where}: widths") for mode, text in widths],
        )
    config = Config(
        select=frozenset(select),
        ignore=frozenset(ignore),
        exclude=tuple(cli.exclude),
        profile=profile,
        domain=tuple(domain),
        widths=dict(widths),
        rlimit=rlimit,
        strict=bool(strict),
        rooted_exclude=tuple(rooted_exclude),
        per_file_ignores=tuple((glob, frozenset(codes)) for glob, codes in per_file_ignores),
        root=file.root if settings is not None else None,
        source=settings.path if settings is not None else None,
        max_file_bytes=max_bytes,
        follow_links=bool(follow_links),
    )
    return config, tuple(chosen)
