"""`confirm` on vLLM findings: a builder's decode layout against the runner's uniform decode
width, replayed on our Triton kernel on the CPU interpreter (a GPU run of the real release's
finding is recorded in bench/runtime/RESULTS.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..conftest import FIXTURES, ROOT
from ..realtree import VLLM_AITER, VLLM_DECODE_PARTS, vllm_tree

pytestmark = pytest.mark.usefixtures("runtime")


def _report(paths: list[str]) -> dict[str, Any]:
    # The scan is imported here: a GPU host that runs only the runtime companion (its tests
    # collected with `-m gpu`) has no libcst.
    from idxcheck.app.run import scan
    from idxcheck.model.config import Config
    from idxcheck.report.json_format import to_dict

    return to_dict(scan(paths, Config(profile="auto")))


AITER = VLLM_AITER
PARTS = VLLM_DECODE_PARTS


def _confirmed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    from idxcheck.runtime_kernels.confirm import confirm_findings

    # A JSON round trip: confirm reads what a report file holds.
    out = confirm_findings(json.loads(json.dumps(doc)), device="cpu")
    return [f for f in out["findings"] if f["code"] == "IDX001"]


def test_the_stride_one_decode_of_the_vllm_fixture_is_confirmed() -> None:
    path = str((FIXTURES / "vllm").relative_to(ROOT))
    doc = _report([path])
    (finding,) = [f for f in _confirmed(doc) if f["path"].endswith("buggy_builder.py")]
    assert finding["mode"] == "UNIFORM_DECODE"
    assert finding["counterexample"] == {"bs": 2, "num_speculative_tokens": 1}
    confirmation = finding["confirmation"]
    assert confirmation["status"] == "confirmed", confirmation
    # Two requests of two tokens laid out with stride 1: the second token of each request is
    # never written, or written from the other request.
    assert confirmation["rows_unwritten"] + confirmation["rows_wrong"] >= 2
    assert "qo_indptr stride 1" in confirmation["reason"]


def test_the_stride_one_decode_part_of_a_split_batch_is_confirmed() -> None:
    # The decode part of a captured verify batch (every request a decode of 1 + k tokens, as
    # the split reads it there) laid out one token per request.
    path = str((FIXTURES / "vllm" / "vllm" / "split_batch_bug.py").relative_to(ROOT))
    runner = str((FIXTURES / "vllm" / "vllm" / "runner.py").relative_to(ROOT))
    found = _confirmed(_report([path, runner]))
    assert {f["mode"] for f in found} == {"CAPTURE", "UNIFORM_DECODE"}
    for finding in found:
        assert finding["confirmation"]["status"] == "confirmed", finding["confirmation"]
        assert "qo_indptr stride 1" in finding["confirmation"]["reason"]


@pytest.mark.network
@pytest.mark.slow
def test_the_aiter_mla_decode_of_vllm_0_26_0_is_confirmed() -> None:
    tree = vllm_tree("0.26.0")
    doc = _report([str(tree / part) for part in PARTS])
    aiter = [f for f in doc["findings"] if Path(f["path"]).resolve() == (tree / AITER).resolve()]
    assert aiter, "the 0.26.0 finding is gone: see tests/test_real_vllm_profile.py"
    (finding,) = _confirmed({**doc, "findings": aiter})
    assert finding["confirmation"]["status"] == "confirmed", finding["confirmation"]
