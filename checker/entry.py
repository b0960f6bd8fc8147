"""The `idxcheck` command's entry (the console script and `python -m idxcheck`): a scan the
answer memo holds (`idxcheck.memo`) is answered before the command line is parsed or anything
but the memo is imported; any other run goes to the command line (`idxcheck.cli`), told the
arguments it may store an answer for."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `typing` is not imported for it: a memo's answer loads nothing more
if TYPE_CHECKING:
    from typing import NoReturn


def entry() -> NoReturn:
    from idxcheck import memo

    argv = sys.argv[1:]
    status = memo.answer(argv)
    if status is not None:
        # The report is written and flushed: nothing else of this process must outlive it.
        os._exit(status)
    memo.arm(argv)
    from idxcheck.parallel import early

    if early.wanted(argv):
        early.fork_helper()  # loads beside the command line's import
    from idxcheck.cli import entry as command

    command()
