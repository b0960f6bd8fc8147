"""`python -m idxcheck`: the `idxcheck` command.

`-m` puts the current folder first on `sys.path`, and the current folder is often the tree
being scanned: its `json.py` or `dataclasses.py` would be imported, and run, in place of the
standard library's. `scan` never imports the code it checks, so that entry goes before anything
else is imported (`python -P -m idxcheck` does not add it). Only `sys` and `os` are used first:
the interpreter has loaded both before it runs this module."""

import os
import sys


def _drop_current_folder() -> None:
    if sys.flags.safe_path or not sys.path:
        return  # `-P` or PYTHONSAFEPATH: nothing was added
    try:
        here = os.getcwd()
    except OSError:  # the current folder is gone: no module can come from it
        here = None
    if sys.path[0] in ("", here):
        del sys.path[0]


if __name__ == "__main__":
    _drop_current_folder()
    from idxcheck.entry import entry

    entry()
