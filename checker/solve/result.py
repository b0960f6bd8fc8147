"""A solver result as plain data, for the verdict cache (no z3 import)."""

from __future__ import annotations

from typing import Any

from idxcheck.model.verdicts import Verdict


def result_to_dict(result: Any) -> dict[str, Any]:
    return {
        "verdict": result.verdict.name,
        "model": dict(result.model),
        "atoms": dict(result.atoms),
        "needs": dict(result.needs),
        "reason": result.reason,
    }


def result_from_dict(data: dict[str, Any]) -> Any:
    from idxcheck.solve.types import SolveResult

    return SolveResult(
        Verdict[data["verdict"]],
        {k: int(v) for k, v in data["model"].items()},
        {k: bool(v) for k, v in data["atoms"].items()},
        {k: int(v) for k, v in data["needs"].items()},
        data["reason"],
    )
