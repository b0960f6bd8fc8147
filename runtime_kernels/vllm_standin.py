"""Load one Triton kernel file of a vLLM source tree without installing vLLM.

vLLM's ``v1/attention/ops/triton_unified_attention.py`` imports a few parts of vLLM that need a
full install (its environment table, logger, platform detection, KV-cache interface). To replay
a finding on that kernel from a downloaded source tree, :func:`load_kernel_file` imports the
kernel file itself, and the sibling files it imports from its own folder (``ops/``), under their
real dotted names, with small stand-ins written here for everything else it reaches:

``vllm.envs``
    ``VLLM_BATCH_INVARIANT`` (False, vLLM's default when the variable is unset).
``vllm.logger``
    ``init_logger(name)``: a :mod:`logging` logger with vLLM's ``*_once`` methods.
``vllm.platforms``
    ``current_platform`` with ``fp8_dtype()`` (``torch.float8_e4m3fn``) and
    ``is_device_capability_family(cap)`` (the CUDA device's major version against ``cap // 10``;
    False without CUDA).
``vllm.triton_utils``
    ``tl`` and ``triton``: this process's own Triton.
``vllm.v1.kv_cache_interface``
    ``KVQuantMode``, the integer codes of the KV-cache quantisation modes (only ``NONE`` is used
    by a replay: it passes no quantised cache).

Any other ``vllm.*`` import fails with ``ModuleNotFoundError`` naming it: the stand-in packages
have no search path except the kernel's own folder, so nothing else of the tree is run. The
stand-ins are in ``sys.modules`` only while the file is imported (whatever was there before,
a real vLLM included, is put back); the loaded module keeps references to them.

Nothing of vLLM is copied here: the kernel file is read from the tree at run time.
"""

from __future__ import annotations

import enum
import importlib.util
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

# The package a kernel file must lie under for the stand-ins to apply.
PACKAGE = "vllm"


class KVQuantMode(enum.IntEnum):
    """The codes vLLM's kernels compare ``kv_quant_mode`` with (``vllm.v1.kv_cache_interface``)."""

    NONE = 0
    FP8_PER_TENSOR = 1
    INT8_PER_TOKEN_HEAD = 2
    FP8_PER_TOKEN_HEAD = 3
    INT4_PER_TOKEN_HEAD = 4


class _OnceLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """vLLM's logger API: the plain levels plus ``debug_once``/``info_once``/``warning_once``."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})
        self._said: set[tuple[str, str]] = set()

    def _once(self, level: int, msg: str, *args: Any) -> None:
        key = (logging.getLevelName(level), msg)
        if key not in self._said:
            self._said.add(key)
            self.log(level, msg, *args)

    def debug_once(self, msg: str, *args: Any, **_: Any) -> None:
        self._once(logging.DEBUG, msg, *args)

    def info_once(self, msg: str, *args: Any, **_: Any) -> None:
        self._once(logging.INFO, msg, *args)

    def warning_once(self, msg: str, *args: Any, **_: Any) -> None:
        self._once(logging.WARNING, msg, *args)


def init_logger(name: str) -> _OnceLogger:
    return _OnceLogger(logging.getLogger(name))


class _Platform:
    """What the kernel file asks of ``vllm.platforms.current_platform``."""

    def fp8_dtype(self) -> Any:
        import torch

        return torch.float8_e4m3fn

    def is_device_capability_family(self, capability: int, device_id: int = 0) -> bool:
        import torch

        if not torch.cuda.is_available():
            return False
        major, _ = torch.cuda.get_device_capability(device_id)
        return major == capability // 10

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"idxcheck's stand-in for vllm.platforms.current_platform has no {name!r}: the kernel "
            "needs more of vLLM than the stand-ins provide (runtime_kernels/vllm_standin.py)"
        )


def _missing(module: str) -> Any:
    def getattr_(name: str) -> Any:
        raise AttributeError(
            f"idxcheck's stand-in for {module} has no {name!r}: the kernel needs more of vLLM "
            "than the stand-ins provide (runtime_kernels/vllm_standin.py)"
        )

    return getattr_


def _leaf(name: str, attrs: dict[str, Any]) -> ModuleType:
    mod = ModuleType(name, f"idxcheck stand-in for {name}")
    mod.__dict__.update(attrs)
    # A name the stand-in lacks fails with what to do, not a bare AttributeError.
    mod.__dict__["__getattr__"] = _missing(name)
    return mod


def _standins(dotted: str, folder: Path) -> dict[str, ModuleType]:
    """The stand-in modules for loading module ``dotted`` from ``folder``: its own package
    searches ``folder`` (for its sibling helpers), every other package nothing."""
    import triton  # type: ignore[import-untyped]
    import triton.language as tl  # type: ignore[import-untyped]

    mods: dict[str, ModuleType] = {
        "vllm.envs": _leaf("vllm.envs", {"VLLM_BATCH_INVARIANT": False}),
        "vllm.logger": _leaf("vllm.logger", {"init_logger": init_logger}),
        "vllm.platforms": _leaf("vllm.platforms", {"current_platform": _Platform()}),
        "vllm.triton_utils": _leaf(
            "vllm.triton_utils", {"tl": tl, "triton": triton, "HAS_TRITON": True}
        ),
        "vllm.v1.kv_cache_interface": _leaf(
            "vllm.v1.kv_cache_interface", {"KVQuantMode": KVQuantMode}
        ),
    }
    own = dotted.rpartition(".")[0]
    for name in {*_packages(dotted), *(p for m in mods for p in _packages(m))}:
        pkg = ModuleType(name, f"idxcheck stand-in for the package {name}")
        pkg.__path__ = [str(folder)] if name == own else []
        mods[name] = pkg
    for name, mod in mods.items():
        parent, _, child = name.rpartition(".")
        if parent in mods:
            setattr(mods[parent], child, mod)
    return mods


def _packages(dotted: str) -> list[str]:
    """``vllm.v1.attention.ops.x`` -> ``vllm``, ``vllm.v1``, ``vllm.v1.attention``, ..."""
    parts = dotted.split(".")[:-1]
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def module_name(path: Path) -> str:
    """The dotted name of a kernel file under a ``vllm`` package folder (ValueError when it lies
    under no folder named ``vllm``)."""
    path = path.resolve()
    parts = path.with_suffix("").parts
    if PACKAGE not in parts[:-1]:
        raise ValueError(f"{path} does not lie under a folder named {PACKAGE!r}")
    # The innermost `vllm` folder: a tree unpacked under `.cache/vllm/<version>/vllm/...`.
    top = len(parts) - 2 - parts[:-1][::-1].index(PACKAGE)
    return ".".join(parts[top:])


@contextmanager
def _installed(mods: dict[str, ModuleType]) -> Iterator[None]:
    """Put ``mods`` in ``sys.modules``, and afterwards every ``vllm`` entry back as it was."""
    before = {k: v for k, v in sys.modules.items() if k == PACKAGE or k.startswith(PACKAGE + ".")}
    for k in before:
        del sys.modules[k]
    sys.modules.update(mods)
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
            del sys.modules[k]
        sys.modules.update(before)


def load_kernel_file(path: Path) -> ModuleType:
    """Import the vLLM kernel file at ``path`` with the stand-ins; return its module."""
    if not path.is_file():
        raise FileNotFoundError(f"no kernel file at {path}")
    dotted = module_name(path)
    with _installed(_standins(dotted, path.resolve().parent)):
        spec = importlib.util.spec_from_file_location(dotted, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[dotted] = module
        spec.loader.exec_module(module)
    return module
