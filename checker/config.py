"""Scan configuration: what the CLI flags and `[tool.idxcheck]` set."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.solve_budget import DEFAULT_RLIMIT


@dataclass(frozen=True)
class Config:
    select: frozenset[str] = frozenset()  # empty: every rule
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    profile: str = "sglang"
    domain: tuple[str, ...] = ()  # extra constraints
    widths: dict[str, str] = field(default_factory=dict)  # mode -> width overrides
    rlimit: int = DEFAULT_RLIMIT
    strict: bool = False
    # Test-only: raise on any UNSUPPORTED verdict, so fixtures expose extraction gaps.
    raise_on_unsupported: bool = False

    def rule_enabled(self, code: str) -> bool:
        if code in self.ignore:
            return False
        return not self.select or code in self.select
