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
    """The result `result_to_dict` gave `data`, or None where `data` is not of its shape (a
    verdict cache entry written otherwise: a miss)."""
    from idxcheck.solve.types import SolveResult

    verdict = data.get("verdict")
    model, atoms, needs = data.get("model"), data.get("atoms"), data.get("needs")
    reason = data.get("reason")
    if not (
        isinstance(verdict, str)
        and verdict in Verdict.__members__
        and isinstance(model, dict)
        and _values(model, int)
        and isinstance(atoms, dict)
        and _values(atoms, bool)
        and isinstance(needs, dict)
        and _values(needs, int)
        and isinstance(reason, str)
    ):
        return None
    return SolveResult(Verdict[verdict], dict(model), dict(atoms), dict(needs), reason)


def reachable_from_dict(data: dict[str, Any]) -> tuple[bool, bool | None]:
    """(whether `data` is a stored reachability, what it says: None for undecided)."""
    found = data.get("reachable", False)
    return (found is None or isinstance(found, bool)) and data.keys() == {"reachable"}, found


def _values(found: dict[Any, Any], kind: type) -> bool:
    """Names to values of `kind` (an int is not a bool, nor a bool an int)."""
    return all(isinstance(k, str) and type(v) is kind for k, v in found.items())
