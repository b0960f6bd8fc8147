"""Each rule's VALID and INVALID cases (Fixit style), run automatically."""

from __future__ import annotations

import textwrap

import pytest

from idxcheck.app.run import scan_source
from idxcheck.model.config import Config
from idxcheck.rules import REGISTRY, Rule

from .expectations import expectations_in_text

CASES = [
    (rule, kind, index, case)
    for rule in REGISTRY
    for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, case in enumerate(cases)
]


def test_every_rule_has_cases_and_docs() -> None:
    for rule in REGISTRY:
        assert rule.VALID and rule.INVALID, rule.code
        doc = rule.doc()
        for heading in ("**Invariant.**", "**Why it breaks.**", "**Example.**", "**Fix.**"):
            assert heading in doc, (rule.code, heading)


def test_codes_and_names_are_unique_and_stable() -> None:
    codes = [r.code for r in REGISTRY]
    names = [r.name for r in REGISTRY]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    assert codes == sorted(codes)
    assert all(n == n.lower() and " " not in n for n in names)


@pytest.mark.parametrize(
    "rule,kind,index,case", CASES, ids=[f"{r.code}-{k}-{i}" for r, k, i, _ in CASES]
)
def test_rule_case(rule: type[Rule], kind: str, index: int, case: str) -> None:
    text = textwrap.dedent(case)
    result = scan_source(text, "case.py", Config(raise_on_unsupported=True))
    got = {(f.span.path, f.span.line, f.code) for f in result.findings if f.code == rule.code}
    if kind == "valid":
        assert got == set()
    else:
        want = expectations_in_text(text, "case.py")
        assert want, "an INVALID case must mark the flagged line with # expect:"
        assert got == {w for w in want if w[2] == rule.code}
