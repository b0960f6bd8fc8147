"""The answer memo: a whole `idxcheck scan`'s output found by its command line and the `stat`
stamps of everything the scan looked at, and written again before the command line is parsed.

A warm scan (nothing changed since the last one) is answered by the stamps of its files
(`idxcheck.incremental.stamps`), but only after the command has imported click, the model's
classes, the configuration reader and the renderers: most of its time (bench/RESULTS.md,
"The answer memo"). This module is imported first, by the command's entry, and uses only
modules the interpreter has loaded at start (`marshal`, `os`, `sys`, `time`, `zlib`): an answer
costs the interpreter's start, one file read and a `stat` per file and folder the scan saw.

An answer is stored by the scan command itself (`store`, after the report is written) when the
run was a plain scan whose whole effect is its standard output and exit code: one report on
standard output and no report file, nothing said on standard error, no per-file error, none of
the options that read or write other state (baselines, git refs, fixes, confirmation), the
cache in use. It holds:

- the key: the arguments as typed, the working folder, the environment variables a scan or
  its output reads, whether each stream is a terminal, the interpreter;
- the stamps (size, modification and change times, inode; or absence) of every file and folder
  the answer depends on: each folder the walk listed (a file added, removed or renamed changes
  its folder's stamp), each file it found, every `pyproject.toml` from the scanned paths up
  (where the configuration is searched), the file `--config` names, idxcheck's own modules and
  folders, and the packages of the solver, the parser and the command line;
- the report with the scan's time cut out, and the exit code.

A scan stores nothing when any of those stamps is younger than `SETTLE_SECONDS` (a file
changed within one clock tick of the scan could keep its stamp), as the stamps' cache does.
Any stamp that differs, a file that cannot be read, another interpreter or another key is no
answer: the command runs as without the memo."""

from __future__ import annotations

import marshal
import os
import sys
import time
import zlib

TYPE_CHECKING = False  # `typing` and `collections.abc` are not imported for their names
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, TypeAlias

    # A path's (size, mtime_ns, ctime_ns, inode), or None where nothing is there.
    Stamp: TypeAlias = tuple[int, int, int, int] | None
    # `key`'s value: builtin values only, as `marshal` stores them.
    Key: TypeAlias = tuple[Any, ...]

# Bump when what an answer holds changes: an answer of another layout is no answer.
LAYOUT = 1
MAX_ANSWERS = 64
ANSWERS_FOLDER = "answers"  # in the cache's folder
SETTLE_SECONDS = 2.0
# The scan's time in a report rendered for an answer: cut out where it appears and written
# again with the time of the run that replays it. Both formats that show the time write this
# value as these characters (text's `:.2f`, JSON's float).
SECONDS_SENTINEL = 9876543.21
SENTINEL_TEXT = "9876543.21"
# How each format writes the scan's time; a format not here must not show it.
TIME_FORMATS = {"text": "text", "concise": "text", "json": "json"}
# The formats an answer may hold: those whose report depends only on the scan and its options
# (SARIF and HTML also carry the address of idxcheck's docs, read from the installation).
ANSWERED_FORMATS = frozenset({"text", "concise", "json", "github", "markdown", "junit"})
# Environment variables that reach a scan's outcome or its report, besides the prefixes below.
ENV_NAMES = (
    "CI",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "FORCE_COLOR",
    "GITHUB_ACTIONS",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LINES",
    "NO_COLOR",
    "TERM",
    "XDG_CACHE_HOME",
)
ENV_PREFIXES = ("IDXCHECK_", "PYTHON")
# Packages whose code decides a scan besides idxcheck's own: a reinstall rewrites their
# `__init__`, which is stamped.
PACKAGES = ("z3", "libcst", "click")


def cache_root() -> str:
    """The cache's folder: $IDXCHECK_CACHE_DIR, else $XDG_CACHE_HOME/idxcheck, else
    ~/.cache/idxcheck."""
    env = os.environ.get("IDXCHECK_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "idxcheck")


def stamp(path: str) -> Stamp:
    """A path's (size, mtime, ctime, inode), links followed; None where nothing is there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def key(argv: Sequence[str]) -> Key:
    """What must be equal for an answer to stand: see the module's docstring."""
    try:
        here = os.getcwd()
    except OSError:
        here = ""
    env = tuple(
        sorted(
            (name, value)
            for name, value in os.environ.items()
            if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
        )
    )
    return (
        LAYOUT,
        tuple(argv),
        here,
        env,
        _isatty(1),
        _isatty(2),
        sys.executable,
        sys.version,
        __file__,
    )


def _answer_file(found: Key) -> str:
    # A short name from a checksum: two keys that share it only take each other's place, since
    # the answer holds its whole key and is compared with it.
    name = f"{zlib.crc32(repr(found).encode('utf-8', 'surrogatepass')):08x}.answer"
    return os.path.join(cache_root(), ANSWERS_FOLDER, name)


def fill(parts: Sequence[str], kind: str, seconds: float) -> str:
    """The report cut at the scan's time, joined again with `seconds` written as the format
    writes it."""
    if len(parts) == 1:
        return parts[0]
    shown = f"{seconds:.2f}" if kind == "text" else repr(round(seconds, 3))
    return shown.join(parts)


def answer(argv: Sequence[str]) -> int | None:
    """Write the stored report of this command line when every stamp it depends on is as it
    was, and return its exit code; None (nothing written) otherwise."""
    started = time.perf_counter()
    if not argv or argv[0] != "scan":
        return None
    found = key(argv)
    try:
        with open(_answer_file(found), "rb") as handle:
            stored = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    try:
        stored_key, deps, parts, kind, status = stored
    except (TypeError, ValueError):
        return None
    if stored_key != found or not isinstance(status, int):
        return None
    for path, expected in deps:
        if stamp(path) != expected:
            return None
    text = fill(parts, kind, time.perf_counter() - started)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader has gone, as `idxcheck.cli.main.echo` treats it: the exit code stands.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
    return status


class _Recording:
    """What the running command tells the memo: its arguments (set by the entry: a command run
    another way, a test's runner, stores nothing), the walks of its scans, and whether it said
    anything on standard error."""

    def __init__(self) -> None:
        self.argv: tuple[str, ...] | None = None
        self.walks: list[list[tuple[str, Stamp]]] = []
        self.spoke = False


_RECORDING = _Recording()


def arm(argv: Sequence[str]) -> None:
    """The command line of this process's command: a scan may store its answer."""
    _RECORDING.argv = tuple(argv)
    _RECORDING.walks.clear()
    _RECORDING.spoke = False


def armed() -> bool:
    return _RECORDING.argv is not None


def note_walk(seen: Iterable[tuple[str, Stamp]]) -> None:
    """The folders listed and the files found by one discovery of the running scan."""
    if _RECORDING.argv is not None:
        _RECORDING.walks.append(list(seen))


def note_stderr() -> None:
    """Something was said on standard error: an answer would not say it again."""
    _RECORDING.spoke = True


def split(text: str) -> list[str]:
    return text.split(SENTINEL_TEXT)


def store(
    parts: Sequence[str], fmt: str, status: int, inputs: Iterable[str], started: float
) -> bool:
    """Store the answer of the running command: its report cut at the scan's time (`parts`,
    rendered with `SECONDS_SENTINEL`) in format `fmt`, its exit code, and the stamps of the
    walk plus those of `inputs` (paths whose absence counts too). `started`: the wall-clock
    time the scan began, against which stamps must have settled. False where nothing may be
    stored (see the module's docstring), or the cache's folder cannot take it."""
    argv = _RECORDING.argv
    kind = TIME_FORMATS.get(fmt, "none")
    if (
        argv is None
        or _RECORDING.spoke
        or len(_RECORDING.walks) != 1
        or fmt not in ANSWERED_FORMATS
        or (kind == "none" and len(parts) > 1)
    ):
        return False
    deps: dict[str, Stamp] = dict(_RECORDING.walks[0])
    for path in (*inputs, *_own_files()):
        deps.setdefault(path, stamp(path))
    limit = int((started - SETTLE_SECONDS) * 1e9)
    if any(s is not None and (s[1] >= limit or s[2] >= limit) for s in deps.values()):
        return False
    found = key(argv)
    target = _answer_file(found)
    payload = marshal.dumps((found, sorted(deps.items()), list(parts), kind, status))
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(payload)
        os.replace(temporary, target)
        _prune(os.path.dirname(target))
    except OSError:
        return False
    return True


def _own_files() -> list[str]:
    """idxcheck's modules and their folders (a module added changes its folder's stamp), and
    the `__init__` of each package in `PACKAGES` this process or its workers load."""
    import importlib.util

    paths: list[str] = []
    for name in ("idxcheck", "idxcheck.rules"):
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            for folder, subfolders, files in os.walk(location):
                subfolders[:] = [d for d in subfolders if d != "__pycache__"]
                paths.append(folder)
                paths.extend(os.path.join(folder, f) for f in files if f.endswith(".py"))
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        paths.append(spec.origin if spec is not None and spec.origin else f"<no {name}>")
    return paths


def _prune(folder: str) -> None:
    """The oldest answers past `MAX_ANSWERS` removed."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".answer")]
    except OSError:
        return
    if len(entries) <= MAX_ANSWERS:
        return
    entries.sort(key=lambda e: e.stat().st_mtime_ns if e.is_file() else 0)
    for entry in entries[: len(entries) - MAX_ANSWERS]:
        try:
            os.remove(entry.path)
        except OSError:
            pass
