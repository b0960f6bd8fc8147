"""The library API keeps its import path: `idxcheck.api` gives the scan with the reporting policy
applied and its configuration."""

from __future__ import annotations

from idxcheck import api


def test_the_documented_example_runs() -> None:
    outcome = api.scan(["fixtures/bugs"], api.Config(select=frozenset({"IDX001"})))
    assert outcome.result.findings
    assert {f.code for f in outcome.result.findings} == {"IDX001"}
    assert all(f.span.label() for f in outcome.result.findings)
