"""A buffer preallocated for the largest batch against the tensor allocated per batch for the same
writes (`idxcheck.interp.handoffs`, IDX005): which pairs are compared, what a finding shows, and
what stays unsupported. Each backend here is built in the test."""

from __future__ import annotations

import json
from pathlib import Path

from idxcheck.app.run import scan_source
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.model.verdicts import Verdict
from idxcheck.report import json_format, sarif, text
from idxcheck.report.context import Report
from idxcheck.sym.factors import without_common_factors
from idxcheck.sym.terms import Const, Sym, Unknown, binop

ROOT = Path(__file__).resolve().parent.parent
BUGGY = ROOT / "fixtures" / "bugs" / "eager_graph_buffer.py"

# A kernel handed a table at replay and a table allocated per forward; GRAPH, EAGER and the
# conditions are filled in by each test.
BACKEND = """import torch


class TableBackend:
    def __init__(self, model_runner):
        self.fanout = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.table = GRAPH

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if GRAPH_WHEN:
            fill_table[(bs,)](HANDED, seq_lens)

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if EAGER_WHEN:
            table = EAGER
            fill_table[(bs,)](table, forward_batch.seq_lens)
"""


def _backend(
    graph: str = "torch.zeros((max_bs, 16))",
    eager: str = "torch.empty((bs * self.fanout, 16))",
    handed: str = "self.table",
    graph_when: str = "True",
    eager_when: str = "True",
) -> str:
    return (
        BACKEND.replace("GRAPH_WHEN", graph_when)
        .replace("EAGER_WHEN", eager_when)
        .replace("GRAPH", graph)
        .replace("EAGER", eager)
        .replace("HANDED", handed)
    )


def _scan(source: str, config: Config | None = None) -> ScanResult:
    result = scan_source(source, "backend.py", config)
    assert result.errors == []
    return result


def _line_of(source: str, needle: str) -> int:
    (line,) = [i for i, text in enumerate(source.splitlines(), start=1) if needle in text]
    return line


def test_a_missing_branch_factor_is_a_finding_at_the_buffer_handed_over() -> None:
    source = _backend()
    result = _scan(source)
    (finding,) = result.findings
    assert finding.code == "IDX005"
    assert finding.span.line == _line_of(source, "fill_table[(bs,)](self.table")
    assert "`{bs} * {topk} * 16`" in finding.message
    assert finding.counterexample["speculative_eagle_topk"] > 1


def test_both_allocations_are_related_locations_in_every_report() -> None:
    source = BUGGY.read_text()
    result = _scan(source)
    (finding,) = result.findings
    graph_line = _line_of(source, "self.graph_slots = torch.zeros")
    eager_line = _line_of(source, "slots = torch.empty")
    allocations = [r for r in finding.related if r.role == "allocation"]
    assert [r.span.line for r in allocations if r.span is not None] == [graph_line, eager_line]
    assert finding.span.line == _line_of(source, "# expect: IDX005")
    report = Report(result=result, exit_code=1)
    lines = json.loads(json_format.render(report))["findings"][0]["related"]
    assert {r["line"] for r in lines if r["role"] == "allocation"} == {graph_line, eager_line}
    sarif_result = json.loads(sarif.render(report))["runs"][0]["results"][0]
    related = {
        loc["physicalLocation"]["region"]["startLine"] for loc in sarif_result["relatedLocations"]
    }
    assert {graph_line, eager_line} <= related
    rendered = text.render(report)
    assert f"backend.py:{graph_line}: preallocated for the largest batch" in rendered
    assert f"backend.py:{eager_line}: allocated per batch here for the same writes" in rendered


def test_the_same_factor_on_both_sides_is_proved_whatever_the_shapes() -> None:
    # A flat table against a two-dimensional one of the same entries.
    result = _scan(
        _backend(
            graph="torch.zeros((max_bs * self.fanout, 16))",
            eager="torch.empty(bs * self.fanout * 16)",
        ),
        Config(raise_on_unsupported=True),
    )
    assert result.findings == []
    assert [o.verdict for o in result.outcomes if o.code == "IDX005"] == [Verdict.PROVED]


def test_only_allocations_handed_over_in_a_common_mode_are_compared() -> None:
    result = _scan(
        _backend(
            graph_when="forward_mode.is_target_verify()",
            eager_when="forward_batch.forward_mode.is_decode_or_idle()",
        )
    )
    assert result.findings == []
    same_mode = _scan(
        _backend(
            graph_when="forward_mode.is_target_verify()",
            eager_when="forward_batch.forward_mode.is_target_verify()",
        )
    )
    assert [(f.code, f.mode) for f in same_mode.findings] == [("IDX005", "TARGET_VERIFY")]


def test_a_slice_of_the_buffer_is_left_to_the_slice_check() -> None:
    # The replay hands over a view, whose end the slice check compares with the allocation.
    source = _backend(handed="self.table[: bs * self.fanout]")
    result = _scan(source)
    assert [(f.code, f.span.line) for f in result.findings] == [
        ("IDX005", _line_of(source, "fill_table[(bs,)](self.table["))
    ]
    assert all("allocated per batch" not in r.message for r in result.findings[0].related)


def test_an_allocation_sized_from_the_runtime_is_unsupported_with_the_reason() -> None:
    result = _scan(_backend(eager="torch.empty((forward_batch.seq_lens_sum, 16))"))
    assert result.findings == []
    (note,) = [n for n in result.notes if n.code == "IDX005"]
    assert note.verdict == Verdict.UNSUPPORTED
    assert "sized from what the runtime passes in" in note.reason


def test_an_allocation_of_a_size_not_modelled_is_unsupported() -> None:
    result = _scan(_backend(eager="torch.empty((bs * self.fanout, self.width_of(bs)))"))
    assert result.findings == []
    (note,) = [n for n in result.notes if n.code == "IDX005"]
    assert note.verdict == Verdict.UNSUPPORTED


def test_two_sizes_of_one_unknown_description_are_not_proved_equal() -> None:
    # Both sizes are the same unknown to the solver (`self.width_of(...)` is not modelled),
    # yet one is the largest batch's and the other one batch's.
    result = _scan(
        _backend(graph="torch.zeros(self.width_of(max_bs))", eager="torch.empty(self.width_of(bs))")
    )
    assert [o.verdict for o in result.outcomes if o.code == "IDX005"] == [Verdict.UNSUPPORTED]


def test_a_size_not_modelled_is_per_batch_only_on_the_eager_path() -> None:
    def elsewhere(eager: str) -> str:
        source = _backend(eager=eager)
        return source.replace("def init_forward_metadata(", "def prepare_batch(")

    unknown = _scan(elsewhere("torch.empty((self.rows_for(bs), 16))"))
    assert [o for o in unknown.outcomes if o.code == "IDX005"] == []
    # Sized from the batch, it is an allocation per batch wherever it is made.
    known = _scan(elsewhere("torch.empty((bs * self.fanout, 16))"))
    assert [f.code for f in known.findings] == ["IDX005"]


def test_a_kept_buffer_of_a_size_not_modelled_is_unsupported() -> None:
    result = _scan(_backend(graph="torch.zeros(self.rows_for(max_bs))"))
    assert result.findings == []
    (note,) = [n for n in result.notes if n.code == "IDX005"]
    assert note.verdict == Verdict.UNSUPPORTED
    assert "rows_for" in note.reason


def test_a_constant_allocation_and_another_preallocation_are_not_compared() -> None:
    for eager in ("torch.empty((4, 16))", "torch.empty((self.fanout, 16))"):
        result = _scan(_backend(eager=eager), Config(raise_on_unsupported=True))
        assert [o for o in result.outcomes if o.code == "IDX005"] == []


def test_a_buffer_the_class_keeps_is_no_per_batch_allocation() -> None:
    # A pool kept from construction, of a size read from the runtime: a buffer of the class,
    # not an allocation that says what one batch needs.
    source = _backend(eager="self.pool").replace(
        "        self.fanout = model_runner.server_args.speculative_eagle_topk\n",
        "        self.fanout = model_runner.server_args.speculative_eagle_topk\n"
        "        self.pool = torch.zeros((model_runner.req_to_token_pool.size, 16))\n",
    )
    assert "self.pool = torch.zeros" in source
    result = _scan(source, Config(raise_on_unsupported=True))
    assert [o for o in result.outcomes if o.code == "IDX005"] == []


def test_common_factors_are_taken_away_but_unknown_ones_stay() -> None:
    bs, topk, k = Sym("bs"), Sym("speculative_eagle_topk"), Sym("page_size")
    need = binop("*", binop("*", bs, topk), k)
    held = binop("*", Sym("max_bs"), k)
    assert without_common_factors(need, held) == (binop("*", bs, topk), Sym("max_bs"))
    unknown = Unknown("a call that is not modelled")
    kept = without_common_factors(binop("*", bs, unknown), binop("*", Sym("max_bs"), unknown))
    assert kept == (binop("*", bs, unknown), binop("*", Sym("max_bs"), unknown))
    assert without_common_factors(binop("*", Const(0), bs), binop("*", Const(0), bs))[0] != Const(1)


COPIED = """import torch


class CopyBackend:
    def __init__(self, model_runner):
        self.fanout = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.rows = torch.zeros((max_bs, 8))

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        self.rows.copy_(spec_info.draft_rows)

    def init_forward_metadata(self, forward_batch):
        spec_info = forward_batch.spec_info
        rows = torch.empty((forward_batch.batch_size * self.fanout, 8))
        rows.copy_(SOURCE)
"""


def test_a_copy_of_the_same_value_is_the_same_writer() -> None:
    source = COPIED.replace("SOURCE", "spec_info.draft_rows")
    result = _scan(source)
    assert [(f.code, f.span.line) for f in result.findings] == [
        ("IDX005", _line_of(source, "self.rows.copy_("))
    ]
    # A copy of another value writes other entries: nothing to compare.
    other = _scan(COPIED.replace("SOURCE", "spec_info.other_rows"))
    assert [o for o in other.outcomes if o.code == "IDX005"] == []
