"""A project profile and a rule defined here, in the test, run through the whole pipeline: the
walk, the prefilter, the interpreter, the tree facts, the rules, the solver and the reports.
Adding a project is writing such a profile module; adding a rule is writing such a class
(CONTRIBUTING.md)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import TYPE_CHECKING

from idxcheck.app.run import scan
from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import LayoutV, Value
from idxcheck.model.config import Config
from idxcheck.model.kinds import Role
from idxcheck.profiles.schema import profile_from_module
from idxcheck.report import json_format, text
from idxcheck.report.context import Report
from idxcheck.rules import REGISTRY, Claim, NoClaim, Rule
from idxcheck.sym.terms import Const, Term, cmp

if TYPE_CHECKING:
    from idxcheck.interp.state import Binding


def toy_profile_module() -> types.ModuleType:
    """A made-up serving engine: a batch has a `step` (PREFILL or VERIFY) and a `size`; in
    VERIFY each request carries `lookahead` query tokens."""
    toy = types.ModuleType("toyserve")
    constants: dict[str, object] = {
        "NAME": "toyserve",
        "CONFIG_SYMBOLS": {"lookahead": "lookahead"},
        "INIT_PARAM_SYMBOLS": {},
        "CONFIG_OBJECT_ATTRS": (),
        "CONFIG_OBJECT_NAMES": ("settings",),
        "CONFIG_FUNCTIONS": (),
        "DISPLAY": {"bs": "bs", "lookahead": "lookahead", "max_bs": "max_bs"},
        "CONTEXT_SYMBOLS": ("max_bs",),
        "DOMAIN": (
            ("bs >= 1", "a batch holds a request"),
            ("bs <= max_bs", "a replayed batch fits the captured one"),
            ("max_bs <= 64", "explored range"),
            ("lookahead >= 2", "a verify step checks at least one draft"),
            ("lookahead <= 8", "explored range"),
        ),
        "DEFAULT_WIDTHS": {
            "VERIFY": ("lookahead", "toy profile: a verify step lays out lookahead")
        },
        "PHASE_WIDTHS": {},
        "PHASE_MODES": {},
        "WIDTH_FUNCTIONS": {},
        "TREE_WIDTH_FUNCTIONS": (),
        "RUNTIME_WIDTH_ATTRS": (),
        "ENTRY_POINTS": frozenset({"plan"}),
        "ENTRY_PARAMS": {"batch": "forward_batch"},
        "FORWARD_BATCH_ATTRS": {"step": "mode", "size": "bs"},
        "QO_INDPTR_WORDS": (("row", "ptr"),),
        "GRID_WORDS": (("widest", "row"),),
        "ROLE_PREFIXES": frozenset({"self"}),
        "ROLE_SUFFIXES": frozenset(),
        "PREFILTER": ("row_ptr", "widest_row"),
        "MODE_MEMBERS": ("PREFILL", "VERIFY"),
        "MODE_PREDICATES": {"is_verify": (("VERIFY",), {}), "is_prefill": (("PREFILL",), {})},
        "RUNNER_WIDTH_ATTRS": (),
        "RUNNER_MODE_ATTRS": (),
        "DRAFT_RUNNER": r"\bDraftRunner\b",
    }
    for name, value in constants.items():
        setattr(toy, name, value)
    return toy


BACKEND = """import torch


class ToyBackend:
    def __init__(self, settings):
        self.lookahead = settings.lookahead

    def plan(self, batch):
        bs = batch.size
        if batch.step.is_verify():
            row_ptr = torch.arange(0, bs * (self.lookahead - 1) + 1, self.lookahead - 1)
            toy_attention(q, row_ptr=row_ptr, widest_row=self.lookahead)
"""


class RowsOfTwo(Rule):
    """A toy invariant: every request's rows are at least two tokens.

    **Invariant.** The stride of a uniform index pointer is at least 2.

    **Fix.** Lay out two tokens per request or more.
    """

    code = "IDX950"
    name = "rows-of-two"
    roles = frozenset({Role.QO})
    summary = "index pointer stride below two"
    message = "{what} `{site}` < 2 in {mode}"

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        if not isinstance(value, LayoutV):
            return NoClaim("not a uniform layout")
        return Claim(
            subject=value.stride,
            holds=cmp(">=", value.stride, Const(2)),
            what="toy stride",
            target=Const(2),
        )


def test_a_toy_profile_and_a_toy_rule_run_through_the_pipeline(tmp_path: Path) -> None:
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "unrelated.py").write_text("x = 1\n")
    profile = profile_from_module(toy_profile_module(), {})
    result = scan([str(tmp_path)], Config(), profile=profile, rules=(*REGISTRY, RowsOfTwo))
    assert result.errors == []
    assert result.stats.files == 2 and result.stats.parsed == 1
    by_code = {f.code: f for f in result.findings}
    # A registered rule on the toy project's sites, against the toy profile's width ...
    stride = by_code["IDX001"]
    assert stride.mode == "VERIFY" and stride.span.line == 11
    assert stride.message == (
        "qo_indptr stride `self.lookahead - 1` != runtime tokens per request `{lookahead}` in VERIFY"
    )
    assert stride.counterexample_text == "bs=2 lookahead=2"
    assert any(
        r.role == "profile" and "toyserve profile default" in r.message for r in stride.related
    )
    # ... and the test's own rule, its message formatted from its own template.
    toy = by_code["IDX950"]
    assert toy.name == "rows-of-two" and toy.severity == "error"
    assert toy.message == "toy stride `self.lookahead - 1` < 2 in VERIFY"
    assert toy.counterexample == {"lookahead": 2}
    # The grid scalar covers the layout: no IDX002 finding; the mode the code never reaches
    # with a site (PREFILL) makes no obligation.
    assert "IDX002" not in by_code
    assert all(f.mode == "VERIFY" for f in result.findings)
    # The reports render the toy project's findings like any other.
    report = Report(result=result, exit_code=1, mode_order=profile.mode_members)
    doc = json.loads(json_format.render(report))
    assert {f["code"] for f in doc["findings"]} >= {"IDX001", "IDX950"}
    assert "IDX950 toy stride" in text.render(report)


def test_without_the_toy_rule_its_code_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "backend.py").write_text(BACKEND)
    profile = profile_from_module(toy_profile_module(), {})
    result = scan([str(tmp_path)], Config(), profile=profile)
    codes = {f.code for f in result.findings}
    assert "IDX001" in codes and "IDX950" not in codes
