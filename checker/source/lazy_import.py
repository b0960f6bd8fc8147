"""Modules bound at import time but loaded on first use.

libcst is slow to import (bench/RESULTS.md, "What each change did"). A scan whose files are all
answered from the cache (`idxcheck.incremental.parts`) parses nothing, so the extractor's modules
bind libcst lazily and it loads when a file is first parsed. A scan that forks workers loads it
first (`load_now`), so that each worker does not load it again."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """`name` as a module object that is executed on its first attribute access."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def load_now(module: ModuleType) -> None:
    """Execute a lazily bound module now: any attribute access does."""
    getattr(module, "__name__", None)


def is_loaded(name: str) -> bool:
    """Whether module `name` is executed: imported, or bound lazily and used since."""
    # A lazily bound module is of a subclass of ModuleType until its first use.
    return type(sys.modules.get(name)) is ModuleType
