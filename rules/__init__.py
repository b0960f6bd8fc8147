"""The rules of idxcheck: one module per invariant, and the explicit, ordered registry."""

from __future__ import annotations

from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.rules.buffer_too_small import BufferTooSmall
from idxcheck.rules.capture_replay_mismatch import CaptureReplayMismatch
from idxcheck.rules.grid_scalar_too_small import GridScalarTooSmall
from idxcheck.rules.grid_stride_disagree import GridStrideDisagree
from idxcheck.rules.indptr_stride_mismatch import IndptrStrideMismatch
from idxcheck.rules.indptr_wrong_length import IndptrWrongLength

# Codes are stable: never renumber, never reuse a retired code.
REGISTRY: tuple[type[Rule], ...] = (
    IndptrStrideMismatch,
    GridScalarTooSmall,
    CaptureReplayMismatch,
    IndptrWrongLength,
    BufferTooSmall,
    GridStrideDisagree,
)

BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in REGISTRY}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in REGISTRY}

__all__ = ["BY_CODE", "BY_NAME", "REGISTRY", "Claim", "NoClaim", "Rule"]
