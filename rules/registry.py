"""The explicit, ordered registry of the invariant rules, by code and by name."""

from __future__ import annotations

from idxcheck.rules.base import Rule
from idxcheck.rules.buffer_too_small import BufferTooSmall
from idxcheck.rules.capture_replay_mismatch import CaptureReplayMismatch
from idxcheck.rules.codes import RULE_CODES
from idxcheck.rules.grid_scalar_too_small import GridScalarTooSmall
from idxcheck.rules.grid_stride_disagree import GridStrideDisagree
from idxcheck.rules.indptr_stride_mismatch import IndptrStrideMismatch
from idxcheck.rules.indptr_wrong_length import IndptrWrongLength

# In the order and with the codes of `RULE_CODES`.
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

if tuple(rule.code for rule in REGISTRY) != RULE_CODES:
    raise ImportError(f"the registry's codes differ from idxcheck.rules.codes: {BY_CODE}")
