"""The replay block of a finding: the concrete metadata of its counterexample, as the runtime
companion (`idxcheck.runtime_kernels`) replays it. Written by the checker (`to_dict`), read back
from a report by `confirm` (`from_dict`): one type on both sides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

# Fields a report must give; the others may be null (not known at the counterexample).
REQUIRED = frozenset({"bs"})


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
    def from_dict(cls, data: object, mode: str = "UNKNOWN") -> ReplayBlock:
        """The block a report holds (its `mode` else `mode`, `capture_bs` else `bs`);
        ValueError naming the field when one that must be given is missing, or one is not an
        integer. A report is input: values are quoted cut short."""
        if not isinstance(data, Mapping):
            raise ValueError("finding has no replay block")
        found = data.get("mode") or mode
        if not isinstance(found, str):
            raise ValueError(f"replay.mode must be a forward mode's name, got {brief(found)}")
        values: dict[str, Any] = {"mode": found}
        for field in fields(cls):
            if field.name != "mode":
                values[field.name] = integer(data, field.name, field.name in REQUIRED)
        if values["capture_bs"] is None:
            values["capture_bs"] = values["bs"]
        return cls(**values)


def integer(data: Mapping[str, Any], key: str, required: bool = False) -> int | None:
    """`data[key]` as an integer (None when it is absent or null and not `required`)."""
    value = data.get(key)
    if value is None:
        if required:
            raise ValueError(f"replay.{key} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"replay.{key} must be an integer, got {brief(value)}")
    return value


def brief(value: object) -> str:
    """A report's value in a message, cut short: it is input, and may be of any size."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) < 10**24:
            return str(value)
        return f"a number of about {value.bit_length() * 30103 // 100_000 + 1} digits"
    text = repr(value) if isinstance(value, str | float | bool) or value is None else None
    if text is None:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."
