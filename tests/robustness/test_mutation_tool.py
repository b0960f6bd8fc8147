"""The mutation tool (bench/mutation/) itself: which sites it finds, which mutants it makes,
how it judges them, and a whole run on a fixture whose every exposable mutant is flagged."""

from __future__ import annotations

import shutil
from pathlib import Path

import libcst as cst
import pytest

from bench.mutation.mutate import GRID, STRIDE, exposable, mutants
from bench.mutation.run import run_backend, summarise
from idxcheck.model.config import Config

from ..conftest import FIXTURES

CONFIG = {"ndt": "ndt", "steps": "steps", "topk": "topk"}

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps
        self.extra = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        n = self.ndt
        qo_indptr = torch.arange(0, bs * n + 1, step=n)
        lens = torch.full((bs,), self.steps + 1, dtype=torch.int32)
        qo_indptr[1:] = torch.cumsum(lens, dim=0)
        self.forward_metadata = Metadata(qo_indptr=qo_indptr, max_extend_len=None)
        self.max_seq_len_q = 1 if forward_batch.flag else self.ndt
        kv = torch.arange(0, bs + 1)
        self.page_indices = torch.arange(0, bs * self.steps, self.steps)
"""


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def test_sites_and_operators() -> None:
    found = mutants(BACKEND)
    by_site = {(m.site.line, m.site.kind): [] for m in found}  # type: dict[tuple[int, str], list[str]]
    for m in found:
        by_site[(m.site.line, m.site.kind)].append(f"{m.operator} {m.description}")
    # `step=n` is mutated where n is written; `torch.full` through its name; no mutant of a
    # None grid scalar, of an arange without a step, or of the stride of a vector that is not
    # a query index pointer (`page_indices`); swaps only to another symbol.
    assert sorted(by_site) == [(12, STRIDE), (14, STRIDE), (17, GRID)]
    assert by_site[(12, STRIDE)] == [
        "swap `self.ndt` -> `self.steps`",
        "add1 `self.ndt` -> `self.ndt + 1`",
    ]
    assert by_site[(14, STRIDE)] == [
        "swap `self.steps + 1` -> `self.extra + 1`",
        "add1 `self.steps + 1` -> `(self.steps + 1) + 1`",
        "drop1 `self.steps + 1` -> `self.steps`",
    ]
    assert "drop-arm `1 if forward_batch.flag else self.ndt` -> `1`" in by_site[(17, GRID)]
    # The mutated file differs from the original exactly at the site, and parses.
    for m in found:
        cst.parse_module(m.source)
        changed = [
            i
            for i, (a, b) in enumerate(
                zip(BACKEND.split("\n"), m.source.split("\n"), strict=True), 1
            )
            if a != b
        ]
        assert changed and all(m.site.line <= i <= m.site.end_line for i in changed), (
            m.description,
            changed,
        )


def test_arange_keeps_its_length() -> None:
    # Every occurrence of the width inside the arange changes together (end and step).
    source = BACKEND.replace(
        "        n = self.ndt\n        qo_indptr = torch.arange(0, bs * n + 1, step=n)\n",
        "        qo_indptr = torch.arange(0, bs * self.ndt + 1, step=self.ndt)\n        pass\n",
    )
    swap = next(m for m in mutants(source) if m.operator == "swap" and m.site.line == 12)
    assert "torch.arange(0, bs * self.steps + 1, step=self.steps)" in swap.source


def test_exposable() -> None:
    # A stride is exposed by any change of value, a grid scalar only by a smaller one.
    assert exposable(STRIDE, expr("self.ndt"), expr("self.ndt + 1"), CONFIG) is True
    assert exposable(GRID, expr("self.ndt"), expr("self.ndt + 1"), CONFIG) is False
    assert exposable(GRID, expr("self.ndt"), expr("self.steps + 1"), CONFIG) is True
    # No request carries more than num_draft_tokens here: a grid of config values at or above
    # it covers every one; with another leaf (front tokens), only the original says.
    assert exposable(GRID, expr("self.steps + 1"), expr("self.ndt"), CONFIG) is False
    assert exposable(GRID, expr("self.steps + 1"), expr("self.steps"), CONFIG) is True
    assert exposable(GRID, expr("self.ndt + front"), expr("self.ndt"), CONFIG) is True
    # num_steps + 1 and num_draft_tokens differ only when topk > 1: still exposable.
    assert exposable(STRIDE, expr("self.steps + 1"), expr("self.ndt"), CONFIG) is True
    # A dropped arm matters only where the condition is false: free, so exposable.
    assert (
        exposable(
            STRIDE, expr("self.ndt if m.is_x() else self.steps + 1"), expr("self.ndt"), CONFIG
        )
        is True
    )
    # Equal in every configuration: not exposable; shared free leaves stay equal.
    assert exposable(STRIDE, expr("n + 0"), expr("n"), CONFIG) is False
    assert (
        exposable(STRIDE, expr("(self.steps + 1) * 2"), expr("self.steps * 2 + 2"), CONFIG) is False
    )
    # A conversion keeps the value: an arm that picks it by the value's type is no other width
    # (dropping it crashes where the other type comes), and a changed width inside it still is.
    picked = "int(m.item()) if isinstance(m, torch.Tensor) else int(m)"
    assert exposable(GRID, expr(picked), expr("int(m.item())"), CONFIG) is False
    assert exposable(GRID, expr(picked), expr("int(m)"), CONFIG) is False
    assert exposable(GRID, expr("int(m.item())"), expr("int(m.item()) - 1"), CONFIG) is True
    assert exposable(GRID, expr("int(m)"), expr("int(n)"), CONFIG) is True
    # What the evaluator cannot read is left undecided (counted as exposable by the runner).
    assert exposable(STRIDE, expr("self.ndt ** 2"), expr("self.ndt ** 2 + 1"), CONFIG) is None


def test_run_on_the_motivating_fix(tmp_path: Path) -> None:
    # The fixed backend of the motivating bug, with the fixtures' ForwardMode as context:
    # every exposable mutant must be flagged, and the grid `+ 1`s are equivalent.
    work = tmp_path / "tree"
    (work / "runtime").mkdir(parents=True)
    shutil.copy(FIXTURES / "runtime" / "forward_mode.py", work / "runtime")
    outcomes = run_backend(FIXTURES, work, "correct/eagle_full_fix.py", None, Config())
    statuses = [o.status for o in outcomes]
    assert statuses.count("flagged") == 8
    assert statuses.count("equivalent") == 5 and statuses.count("missed") == 0
    # The grid `+ 1`s, and the grids that give draft extend v1 `num_draft_tokens` or more:
    # a v1 request carries at most min(num_steps + 1, num_draft_tokens) tokens.
    equivalent = sorted(
        (o.operator, o.description.split(" -> ")[1]) for o in outcomes if o.status == "equivalent"
    )
    assert all(o.kind == GRID for o in outcomes if o.status == "equivalent")
    assert [op for op, _ in equivalent] == ["add1", "add1", "add1", "drop-arm", "swap"]
    assert equivalent[3][1] == "`self.num_draft_tokens`"
    assert "else self.num_draft_tokens + 1" in equivalent[4][1]
    assert all(o.findings for o in outcomes if o.status == "flagged")
    assert "score 100.0%" in summarise(outcomes)
    assert (work / "correct" / "eagle_full_fix.py").read_text() == (
        FIXTURES / "correct" / "eagle_full_fix.py"
    ).read_text()


def test_a_missed_mutant_is_reported_with_the_reason(tmp_path: Path) -> None:
    # A width idxcheck cannot follow (a runtime `torch.cat`): the mutant is missed, and the
    # summary says what idxcheck said at the site.
    work = tmp_path / "tree"
    work.mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b.py").write_text(
        "import torch\n\n\nclass B:\n"
        "    def init_forward_metadata(self, forward_batch):\n"
        "        bs = forward_batch.batch_size\n"
        "        if forward_batch.forward_mode.is_target_verify():\n"
        "            n = torch.cat([forward_batch.a, forward_batch.b]).sum()\n"
        "            self.qo_indptr = torch.arange(0, bs * n + 1, step=n)\n"
    )
    outcomes = run_backend(tmp_path / "src", work, "b.py", None, Config())
    assert [o.status for o in outcomes] == ["missed"]
    assert outcomes[0].reason
    assert "missed:" in summarise(outcomes)


def test_a_reported_equivalent_mutant_is_not_counted_as_found() -> None:
    # A rule may report a mutant that no configuration makes wrong (IDX006 warns of a grid
    # scalar one wider than its pointer's stride): counted with the equivalent ones, apart from
    # the exposable mutants and the score.
    from bench.mutation.run import Outcome

    def outcome(status: str, exposable_: bool | None) -> Outcome:
        return Outcome("b.py", "B.f", 1, GRID, "add1", "`1` -> `1 + 1`", exposable_, status)

    outcomes = [
        outcome("flagged", True),
        outcome("missed", True),
        outcome("flagged-equivalent", False),
        outcome("equivalent", False),
    ]
    text = summarise(outcomes)
    assert "equivalent: 2, of them reported all the same: 1" in text
    assert "exposable: 2, flagged: 1, missed: 1, score 50.0%" in text


def test_whole_tree_run_on_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The command as a user runs it: each mutant scanned in a copy of the whole folder (here the
    # fixtures, other files with findings of their own among them) with a cache; the mutated
    # file's new findings alone count, and the folder itself is left as it was.
    import json

    from bench.mutation.run import main

    backend = "correct/eagle_full_fix.py"
    before = (FIXTURES / backend).read_text()
    out = tmp_path / "mutants.json"
    assert main(["--tree", str(FIXTURES), "--backend", backend, "--json", str(out)]) == 0
    statuses = [o["status"] for o in json.loads(out.read_text())]
    assert statuses.count("flagged") == 8 and statuses.count("missed") == 0
    assert statuses.count("equivalent") == 5
    assert "exposable: 8, flagged: 8, missed: 0, score 100.0%" in capsys.readouterr().out
    assert (FIXTURES / backend).read_text() == before
