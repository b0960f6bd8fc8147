"""The rules of idxcheck: one module per invariant, and the explicit, ordered registry."""

from __future__ import annotations

from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.rules.grid_scalar_too_small import GridScalarTooSmall
from idxcheck.rules.indptr_stride_mismatch import IndptrStrideMismatch

# Codes are stable: never renumber, never reuse a retired code.
REGISTRY: tuple[type[Rule], ...] = (
    IndptrStrideMismatch,
    GridScalarTooSmall,
)

BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in REGISTRY}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in REGISTRY}

__all__ = ["BY_CODE", "BY_NAME", "REGISTRY", "Claim", "NoClaim", "Rule"]
