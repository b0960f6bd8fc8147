"""Subprocess entry point: replay cases in a process whose triton is in the mode they need.

``python -m idxcheck.runtime_kernels.worker REQUEST.json RESULT.json``; the parent
(``replay._replay_in_subprocess``) sets or clears ``TRITON_INTERPRET`` in our environment, so
triton is imported here in the right mode from the start. Results go to a file rather than stdout
because kernels and the interpreter may print.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m idxcheck.runtime_kernels.worker REQUEST.json RESULT.json")
        return 2
    from .replay import (
        ReplayError,
        case_from_dict,
        replay_many,
        result_to_dict,
    )

    with open(argv[0], encoding="utf-8") as fh:
        request = json.load(fh)
    cases = [case_from_dict(c) for c in request["cases"]]
    results = replay_many(
        cases,
        device=request["device"],
        kernel=request.get("kernel"),
        convention=request.get("convention"),
        probe=bool(request.get("probe", True)),
    )
    out: list[dict[str, Any]] = []
    for r in results:
        out.append({"error": r.reason} if isinstance(r, ReplayError) else result_to_dict(r))
    with open(argv[1], "w", encoding="utf-8") as fh:
        json.dump({"results": out}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
