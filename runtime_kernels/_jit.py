"""Which Triton this process has: compiled (GPU) or interpreted (``TRITON_INTERPRET=1``).

Triton fixes "compile or interpret" per function when ``triton.jit`` wraps it, reading
``TRITON_INTERPRET`` at that moment; and ``triton.language`` wraps its own helpers (``tl.zeros``,
``tl.maximum``, ...) when triton is first imported. So a process's triton is in one mode for good
once ``triton.language`` is imported: an interpreted kernel calling a compiled ``tl.zeros`` fails
("Cannot call @triton.jit'd outside of the scope of a kernel"). Hence:

* before the first import we may still choose, and :func:`ensure_mode` sets the variable and
  imports triton in the mode the replay needs;
* afterwards a replay in the other mode runs in a subprocess (``worker.py``) started with the
  variable set (CPU) or cleared (GPU).

Our kernel modules (``extend_attention``, ``probe``) decorate at import, so they are imported only
after :func:`ensure_mode` said yes.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

_ENV = "TRITON_INTERPRET"


def triton_mode() -> bool | None:
    """True: this process's triton interprets; False: it compiles; None: not imported yet."""
    if "triton.language" not in sys.modules and "triton" not in sys.modules:
        return None
    from triton.language import standard  # type: ignore[import-untyped]

    return is_interpreted(standard.zeros) is True


def ensure_mode(interpret: bool) -> bool:
    """Make triton interpret (or compile) if it is not imported yet; True if the mode now fits.

    Choosing the interpreter leaves ``TRITON_INTERPRET=1`` in the environment so that kernels
    imported later (a user's ``--kernel`` module) are interpreted too.
    """
    mode = triton_mode()
    if mode is None:
        if interpret:
            os.environ[_ENV] = "1"
        elif os.environ.get(_ENV) == "1":
            return False  # the user asked for the interpreter; a GPU replay goes elsewhere
        # Decorates triton's own helpers (tl.zeros, ...) in the mode just chosen.
        import triton.language  # type: ignore[import-untyped]  # noqa: F401

        mode = triton_mode()
    return mode is interpret


def is_interpreted(obj: object) -> bool | None:
    """True for an interpreted Triton kernel, False for a compiled one, None for anything else."""
    try:
        from triton.runtime.interpreter import InterpretedFunction  # type: ignore[import-untyped]
        from triton.runtime.jit import JITFunction  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - very old triton
        return None
    if isinstance(obj, InterpretedFunction):
        return True
    if isinstance(obj, JITFunction):
        return False
    return None


class KernelModeError(RuntimeError):
    """A user module holds Triton kernels of the other mode."""


def import_user_module(name: str, *, interpret: bool) -> ModuleType:
    """Import ``name`` (only because the user asked) and check its kernels' mode."""
    return _checked(importlib.import_module(name), name, interpret=interpret)


def import_user_file(path: Path, *, interpret: bool) -> ModuleType:
    """Import the Python file at ``path`` (only because the user asked) and check its kernels'
    mode. A file under a folder named ``vllm`` (a vLLM source tree) is imported under its dotted
    name with stand-ins for the parts of vLLM it needs (``vllm_standin.py``); any other file as a
    module named after it."""
    from .vllm_standin import PACKAGE, load_kernel_file

    if PACKAGE in path.resolve().parts[:-1]:
        return _checked(load_kernel_file(path), str(path), interpret=interpret)
    if not path.is_file():
        raise FileNotFoundError(f"no kernel file at {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return _checked(module, str(path), interpret=interpret)


def _checked(module: ModuleType, name: str, *, interpret: bool) -> ModuleType:
    modes = {is_interpreted(v) for v in vars(module).values()} - {None}
    if modes and modes != {interpret}:
        want = "interpreted (TRITON_INTERPRET=1)" if interpret else "compiled"
        raise KernelModeError(f"module {name} holds Triton kernels that are not {want}")
    return module
