"""``--emit-test DIR``: write a standalone pytest file per confirmed finding.

Each file replays the finding's counterexample with ``idxcheck.runtime_kernels`` (on a GPU when
one is usable, else on the CPU through the Triton interpreter) and pins:

* ``test_counterexample_reproduces``: the metadata the finding describes leaves exactly these
  rows unwritten / wrong (the rows are fixed by the indexing contract, so the numbers do not
  depend on the device; BLOCK_M is pinned to the one the confirmation used);
* ``test_probe_matches_contract``: the coverage probe's map equals the contract's prediction
  (only for a kernel the probe models: not vLLM's ``unified_attention``);
* ``test_layout_metadata_is_clean``: the metadata the runtime layout needs (stride W, grid scalar
  W) writes every row correctly, which is what a fixed backend must build.

A user keeps the file in their own repo as a regression test; it needs ``idxcheck[runtime]`` and
skips cleanly without torch/triton.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .replay import ReplayResult

_TEMPLATE = '''\
"""Regression test emitted by idxcheck for a confirmed finding ({code}, {mode}).

{summary}

test_counterexample_reproduces pins what the finding's metadata does to an extend-attention kernel
(its rows are fixed by the indexing contract, whatever the device). test_layout_metadata_is_clean
replays the metadata the runtime layout needs; a fixed backend builds exactly that. Once the
backend is fixed, idxcheck stops reporting the finding; keep this file as a kernel-level guard or
delete it.
"""

from __future__ import annotations

import importlib.util

import pytest

# Look for torch/triton without importing triton: its first import fixes compile-vs-interpret for
# the whole process, and the replay wants to choose (the interpreter when no GPU is usable).
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
    pytest.skip("needs the runtime extra: {hint}", allow_module_level=True)

{layout_import}from idxcheck.runtime_kernels.replay import ReplayCase, replay  # noqa: E402

FINDING = {finding!r}
KERNEL = {kernel!r}
KERNEL_ADAPTER = {adapter!r}
CASE = {case!r}
EXPECTED_UNWRITTEN = {unwritten!r}
EXPECTED_WRONG = {wrong!r}


def test_counterexample_reproduces() -> None:
    result = replay(CASE, kernel=KERNEL, convention=KERNEL_ADAPTER)
    assert result.unwritten_rows == EXPECTED_UNWRITTEN, "rows never written changed"
    assert result.wrong_rows == EXPECTED_WRONG, "rows written wrong changed"
{probe_test}

def test_layout_metadata_is_clean() -> None:
    result = replay(CASE.fixed(), kernel=KERNEL, convention=KERNEL_ADAPTER)
    assert result.rows_unwritten == 0, result.unwritten_rows
    assert result.rows_wrong == 0, result.wrong_rows
    assert result.stray_write_rows == 0
'''

# Only for a kernel the coverage probe models (``adapters.follows_extend_contract``): vLLM's
# `unified_attention` runs without the probe, so its emitted test has no probe to compare.
_PROBE_TEST = """

def test_probe_matches_contract() -> None:
    result = replay(CASE, kernel=KERNEL, convention=KERNEL_ADAPTER)
    assert result.probe is not None
    predicted = predict_rows(
        bs=CASE.bs,
        capture_bs=CASE.padded_bs,
        tokens_per_req=CASE.tokens_per_req,
        qo_indptr=uniform_indptr(CASE.padded_bs, CASE.qo_stride),
        max_len=CASE.max_len,
        block_m={block_m},
    )
    assert result.probe.rows.computed_as == predicted.computed_as"""
_LAYOUT_IMPORT = (
    "from idxcheck.runtime_kernels.layout import predict_rows, uniform_indptr  # noqa: E402\n"
)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "finding"


def _finding_summary(finding: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-plain fields worth keeping beside the test (repr() of it is valid Python)."""
    keep = ("code", "mode", "verdict", "path", "file", "line", "message", "counterexample")
    out: dict[str, Any] = {}
    for key in keep:
        value = finding.get(key)
        if isinstance(value, str | int | float | bool) or value is None:
            if value is not None:
                out[key] = value
        elif isinstance(value, Mapping):
            out[key] = {
                str(k): v for k, v in value.items() if isinstance(v, str | int | float | bool)
            }
    return out


def render_test(
    finding: Mapping[str, Any],
    result: ReplayResult,
    *,
    kernel: str | None = None,
    kernel_adapter: str | None = None,
) -> str:
    """The text of one emitted test file."""
    import dataclasses

    from .env import INSTALL_HINT
    from .layout import default_block_m

    case = result.case
    # Pin BLOCK_M so the test means the same on every device (the default differs per arch).
    block_m = result.block_m or case.block_m or default_block_m(case.head_dim, None)
    case = dataclasses.replace(case, block_m=block_m, dtype=None)
    # A kernel that picks its own block sizes (vLLM's) is not run at the pinned BLOCK_M.
    at = f"BLOCK_M {block_m}" if result.block_m is not None else "the kernel's own block sizes"
    summary = (
        f"Confirmed on {result.device} at {at}: {result.rows_unwritten} of "
        f"{result.rows_total} rows never written, {result.rows_wrong} written wrong."
    )
    return _TEMPLATE.format(
        code=str(finding.get("code", "?")).replace('"', "'"),
        mode=case.mode.replace('"', "'"),
        summary=summary,
        hint=INSTALL_HINT,
        finding=_finding_summary(finding),
        kernel=kernel,
        adapter=kernel_adapter,
        case=case,
        unwritten=result.unwritten_rows,
        wrong=result.wrong_rows,
        probe_test=_PROBE_TEST.format(block_m=block_m) if result.probe is not None else "",
        layout_import=_LAYOUT_IMPORT if result.probe is not None else "",
    )


def write_tests(
    confirmed: Iterable[tuple[Mapping[str, Any], ReplayResult]],
    out_dir: str | Path,
    *,
    kernel: str | None = None,
    kernel_adapter: str | None = None,
) -> list[Path]:
    """Write one ``test_idxcheck_<code>_<mode>_<n>.py`` per confirmed finding; return the paths."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for n, (finding, result) in enumerate(confirmed, start=1):
        name = f"test_idxcheck_{_slug(str(finding.get('code', 'finding')))}_"
        name += f"{_slug(result.case.mode)}_{n}.py"
        path = directory / name
        path.write_text(
            render_test(finding, result, kernel=kernel, kernel_adapter=kernel_adapter),
            encoding="utf-8",
        )
        paths.append(path)
    return paths
