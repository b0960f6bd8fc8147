"""`idxcheck confirm` and `idxcheck scan --confirm`: replay each refuted finding's
counterexample with the runtime companion (`idxcheck.runtime_kernels.confirm`) and put what it
saw on the finding. torch and triton are imported there, lazily; this module imports neither.

Findings are replayed one at a time so that a progress bar can advance per finding; the
regression tests of `--emit-test` are numbered across the whole run as one batched call would."""

from __future__ import annotations

import copy
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ConfirmOptions:
    kernel: str | None = None
    kernel_adapter: str | None = None
    device: str = "auto"
    emit_test_dir: str | None = None
    probe: bool = True
    dtype: str | None = None


def confirm_document(
    doc: Mapping[str, Any], options: ConfirmOptions, progress: Progress | None = None
) -> dict[str, Any]:
    from idxcheck.runtime_kernels.confirm import confirm_findings, is_replayable

    out: dict[str, Any] = copy.deepcopy(dict(doc))
    findings = out.get("findings")
    if not isinstance(findings, list):
        raise ValueError("not an idxcheck findings document (no findings list)")
    targets = [i for i, f in enumerate(findings) if isinstance(f, dict) and is_replayable(f)]
    emitted = 0
    for done, index in enumerate(targets, start=1):
        single = {
            **{k: v for k, v in out.items() if k != "findings"},
            "findings": [findings[index]],
        }
        with tempfile.TemporaryDirectory(prefix="idxcheck-emit-") as scratch:
            confirmed = confirm_findings(
                single,
                kernel=options.kernel,
                kernel_adapter=options.kernel_adapter,
                device=options.device,
                emit_test_dir=scratch if options.emit_test_dir else None,
                probe=options.probe,
                dtype=options.dtype,
            )
            findings[index] = confirmed["findings"][0]
            if options.emit_test_dir:
                emitted = _collect_tests(scratch, options.emit_test_dir, emitted)
        if progress is not None:
            progress(done, len(targets))
    return out


def _collect_tests(scratch: str, target: str, emitted: int) -> int:
    """Move the tests of one replay into `target`, renumbered after those already there."""
    names = sorted(os.listdir(scratch))
    if names:
        os.makedirs(target, exist_ok=True)
    for name in names:
        emitted += 1
        renamed = re.sub(r"_\d+\.py$", f"_{emitted}.py", name)
        shutil.move(os.path.join(scratch, name), os.path.join(target, renamed))
    return emitted


def tally(doc: Mapping[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in doc.get("findings") or []:
        if isinstance(finding, Mapping) and isinstance(finding.get("confirmation"), Mapping):
            status = str(finding["confirmation"].get("status"))
            counts[status] = counts.get(status, 0) + 1
    return counts
