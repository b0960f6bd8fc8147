"""The command line: `idxcheck scan`, `idxcheck confirm`, `idxcheck rule`, `idxcheck rules`,
`idxcheck cache`, `idxcheck symbols` (a module each), and the process's entry."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, TextIO

from idxcheck.cli import cache, confirm, rules, scan, symbols  # noqa: F401  (each registers its command)
from idxcheck.cli.main import closed, main
from idxcheck.parallel.early import COMMAND_GC_THRESHOLD

__all__ = ["COMMAND_GC_THRESHOLD", "entry", "main"]


# Modules whose exit handlers must run: the runtime companion's (CUDA and Triton state).
_NEEDS_TEARDOWN = ("torch", "triton")


def entry() -> NoReturn:
    """The `idxcheck` command (and `python -m idxcheck`): `main`, then an exit that skips the
    interpreter's teardown once the output is flushed: freeing every object of a scan one by
    one (the syntax trees, the solver's terms, libcst's and z3's modules) is a noticeable share
    of a pre-commit run, and what must outlive the process is written already (the cache
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
        if _flushed(sys.stdout) and _flushed(sys.stderr):
            os._exit(status)
    sys.exit(status)


def _flushed(stream: TextIO) -> bool:
    """Flush `stream`; False when it failed for another reason than a closed pipe (the usual
    exit then reports it as Python does). A closed pipe's reader has gone: what was left for
    it goes to the null device, quietly."""
    try:
        stream.flush()
    except BrokenPipeError:
        closed(stream)
    except (OSError, ValueError):
        return False
    return True
