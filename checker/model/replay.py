"""The replay block of a finding: the concrete metadata of its counterexample, as the runtime
companion (`idxcheck.runtime_kernels`) replays it. Written by the checker, read by `confirm`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ReplayBlock:
    mode: str
    bs: int  # requests in the replayed batch
    capture_bs: int  # the batch size the graph is captured at
    tokens_per_req: int | None  # the runtime's width: query tokens per request
    qo_stride: int | None  # the backend's index-pointer stride
    max_len: int | None  # the backend's grid scalar
    segments_per_req: int | None  # index-pointer segments per request (1 but for per-token)
    block_m: int | None  # the kernel block size that drops rows (None: the device default)
    head_dim: int | None  # the head dimension it drops them at (None: 128)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayBlock:
        """The block a report holds; ValueError naming the field when one is missing or not of
        its type (an integer, or null where the field may be unknown)."""
        if not isinstance(data, Mapping):
            raise ValueError("the replay block is not an object")
        mode = data.get("mode")
        if not isinstance(mode, str):
            raise ValueError("replay.mode must be a string")
        values: dict[str, Any] = {"mode": mode}
        for field in fields(cls):
            if field.name == "mode":
                continue
            value = data.get(field.name)
            optional = field.name not in ("bs", "capture_bs")
            if value is None and optional:
                values[field.name] = None
            elif isinstance(value, int) and not isinstance(value, bool):
                values[field.name] = value
            else:
                kind = "an integer or null" if optional else "an integer"
                raise ValueError(f"replay.{field.name} must be {kind}, got {value!r}")
        return cls(**values)
