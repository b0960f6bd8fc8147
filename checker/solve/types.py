"""What the solver answers, as data (importable without z3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from idxcheck.model.verdicts import Verdict


@dataclass(frozen=True)
class SolveResult:
    verdict: Verdict
    model: dict[str, int] = field(default_factory=dict)
    atoms: dict[str, bool] = field(default_factory=dict)
    needs: dict[str, int] = field(default_factory=dict)
    reason: str = ""
