"""The command group, its error handling, and what the commands share: output formats, colour,
progress bars, writing reports, the codes a run exits with.

Exit codes: 0 clean (unused suppressions are warnings; anything with --exit-zero), 1 findings
or per-file errors (and, with --strict, UNKNOWN verdicts and unused suppressions), 2 usage or
internal error (a bad configuration file included), 130 interrupted (Ctrl-C). A traceback
reaches the user only with --debug.

A closed pipe (`idxcheck rule IDX001 | head -2`) is not an error: the reader has what it wanted.
Writing to it stops quietly; `scan` and `confirm` still write their report files and exit with
their verdict, any other command exits 0 (as ruff does). A stream that fails otherwise (a full
disk) is an error, exit 2."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, NoReturn

import click

from idxcheck import __version__, memo
from idxcheck.app.command import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

if TYPE_CHECKING:
    from idxcheck.cli.progress import ProgressLine

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "main"]

FORMAT_MODULES = {
    "text": "text",
    "concise": "concise",
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
        except BrokenPipeError as exc:
            gone = [stream for stream in (sys.stdout, sys.stderr) if reader_gone(stream)]
            if not gone:  # another pipe (a worker's): an internal error like any other
                internal_error(ctx, exc)
            for stream in gone:  # the command's own output, cut short by its reader
                closed(stream)
            ctx.exit(EXIT_CLEAN)
        except KeyboardInterrupt:  # Ctrl-C, also during a solver check (`idxcheck.solve`)
            click.echo("idxcheck: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            internal_error(ctx, exc)


def internal_error(ctx: click.Context, exc: Exception) -> NoReturn:
    """One line about an internal error (the traceback with --debug), and exit 2."""
    if ctx.obj and ctx.obj.get("debug"):
        import traceback

        traceback.print_exc()
    else:
        tell(
            f"idxcheck: internal error: {type(exc).__name__}: {_describe(exc)} "
            "(run with --debug for the traceback)"
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
    line = line if len(line) <= 300 else line[:297] + "..."
    from idxcheck.report.escape import display

    return display(line)  # it may quote a scanned file's name or text


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="idxcheck")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Prove that attention-backend index pointers and grid sizes agree with the runtime's
    token layout, in every forward mode and speculative configuration."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


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
def progress_bar(label: str, minimum: int, shown: bool = True) -> Iterator[ProgressLine | None]:
    """A progress line on stderr when it is a terminal (and `shown`), None otherwise: piped
    and CI output stays clean. It is drawn once a counted step reaches `minimum` items
    (`cli.progress`), and erased as the block ends. `label`: the work, for the reader of the
    code (the line names each step itself)."""
    if not shown or not _isatty(sys.stderr):
        yield None
        return
    from idxcheck.cli.progress import ProgressLine

    drawn = ProgressLine(sys.stderr, minimum)
    try:
        yield drawn
    finally:
        try:
            drawn.close()
        except OSError:
            pass  # stderr closed meanwhile: nothing left to erase


def write(path: str, text: str) -> None:
    """Write a report whole or not at all; a failure ends the run with exit 2."""
    from idxcheck.app.outfile import OutputError, write_text

    try:
        write_text(path, text)
    except OutputError as exc:
        fail(str(exc))


def is_closed_pipe(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


def reader_gone(stream: IO[str]) -> bool:
    """Whether `stream` is a pipe whose reading end is closed everywhere (poll reports an
    error condition on such a writing end, and on nothing a reader still holds)."""
    try:
        fd = stream.fileno()
        import select

        poller = select.poll()
        poller.register(fd, 0)  # error conditions are reported whatever is asked for
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # not a file, or no poll on this system
        return False


def closed(stream: IO[str]) -> None:
    """Send what is still to go to `stream` (and what is buffered for it) to the null device:
    its reader is gone, and neither a later write nor the interpreter's last flush may fail."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a file (a test's capture): nothing to do
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)


def echo(text: str, color: bool = False) -> None:
    """A report on standard output. A closed pipe ends it quietly and the run goes on (its other
    reports, its exit code); any other failure (a full disk) ends the run with exit 2, as a
    file would."""
    try:
        click.echo(text, nl=False, color=color)
        sys.stdout.flush()
    except OSError as exc:
        closed(sys.stdout)  # nothing more can go there: the exit must not try again
        if is_closed_pipe(exc):
            return
        fail(f"cannot write standard output: {exc.strerror or exc}")


def validate_codes(codes: tuple[str, ...], option: str) -> None:
    if not codes:
        return  # the rule catalogue is not loaded for nothing
    from idxcheck.rules.catalog import known_codes

    known = known_codes()
    for code in codes:
        if code not in known:
            raise click.BadParameter(
                f"unknown rule code {code!r} (see `idxcheck rules`)", param_hint=option
            )


def tell(message: str) -> None:
    """A line on standard error; a closed one (`2>&1 | head -1`) does not stop the command."""
    memo.note_stderr()
    try:
        click.echo(message, err=True)
    except BrokenPipeError:
        closed(sys.stderr)


def warn(message: str) -> None:
    tell(f"idxcheck: warning: {message}")


def fail(message: str) -> NoReturn:
    tell(f"idxcheck: {message}")
    sys.exit(EXIT_ERROR)
