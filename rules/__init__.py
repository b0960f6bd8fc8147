"""The rules of idxcheck: one module per invariant, and the explicit, ordered registry
(`idxcheck.rules.registry`).

The registry and the rule base are loaded on first use: a module of this package that needs
neither (the meta rules about suppression comments, read by every scan that applies its
policy) then loads no rule, nor the interpreter values the rules are written against."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from idxcheck.rules.base import Claim, NoClaim, Rule
    from idxcheck.rules.registry import BY_CODE, BY_NAME, REGISTRY

_WHERE = {
    "Claim": "idxcheck.rules.base",
    "NoClaim": "idxcheck.rules.base",
    "Rule": "idxcheck.rules.base",
    "BY_CODE": "idxcheck.rules.registry",
    "BY_NAME": "idxcheck.rules.registry",
    "REGISTRY": "idxcheck.rules.registry",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["BY_CODE", "BY_NAME", "REGISTRY", "Claim", "NoClaim", "Rule"]
