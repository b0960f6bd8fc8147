"""`idxcheck confirm` and `idxcheck scan --confirm`: replay each refuted finding's
counterexample with the runtime companion (`idxcheck.runtime_kernels.confirm`) and put what it
saw on the finding. torch and triton are imported there, lazily; this module imports neither.

Findings are replayed one at a time so that a progress bar can advance per finding; the
regression tests of `--emit-test` are numbered across the whole run as one batched call would."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Progress = Callable[[int, int], None]

# A report of `scan --format json` nests a handful of levels; one nested far deeper is not one
# (and would exhaust the recursion of copying and writing it).
MAX_REPORT_DEPTH = 64


class ReportError(ValueError):
    """A findings document that `confirm` cannot read, with what is wrong with it."""


def read_report(data: bytes) -> dict[str, Any]:
    """The findings document in `data` (a file's bytes), or ReportError saying why it is not
    one: not UTF-8, not JSON (a number past Python's 4,300 digits included), nested too deep,
    or of the wrong shape (not an object, findings not a list of objects)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"is not UTF-8 text (byte {exc.start})") from None
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ReportError("is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"is not JSON: {exc}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ReportError(f"is not JSON idxcheck reads: {_first_line(exc)}") from None
    depth = _depth(doc)
    if depth > MAX_REPORT_DEPTH:
        raise ReportError(f"nests values {depth} levels deep (a report has at most a few)")
    if not isinstance(doc, dict):
        raise ReportError("is not an idxcheck findings document (not a JSON object)")
    findings = doc.get("findings")
    if not isinstance(findings, list):
        raise ReportError("is not an idxcheck findings document (no findings list)")
    for index, finding in enumerate(findings):
        if not isinstance(finding, dict):
            raise ReportError(f"findings[{index}] is not an object")
    return doc


def _depth(value: object) -> int:
    """How deep `value` nests (a scalar: 0), without recursion, stopping past the limit."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_REPORT_DEPTH:
            break
        if isinstance(item, dict):
            pending.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            pending.extend((v, depth + 1) for v in item)
    return deepest


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


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
