"""Lists filled one entry per index by `append` in a loop over `range` (`idxcheck.interp.fills`,
`KeyedStores.entry`): entry k is the appended value with k for the loop's variable, read back
at a symbolic index (`self.rows[bs - 1]`) under the condition that the index is in range, and
refilled in place entry by entry. What the syntax does not show to give entry k to iteration k
stays UNSUPPORTED with its reason. Each backend here is built in the test."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from idxcheck.app.run import scan
from idxcheck.interp.choices import iter_choice
from idxcheck.interp.fills import classify_appends, other_uses
from idxcheck.interp.stores import KeyedStores, LoopFill, substitute
from idxcheck.interp.values import BufferV, IntV, LayoutV, UnboundV, UnknownV
from idxcheck.model.findings import ScanResult
from idxcheck.model.spans import Loc, Span
from idxcheck.model.verdicts import Verdict
from idxcheck.source.files import FunctionSource, SourceFile
from idxcheck.sym.terms import TRUE, Atom, Const, Formula, Sym, Term, binop, cmp, conj, conjuncts

K = Sym("@loop:test")
BS = Sym("bs")
MAX_BS = Sym("max_bs")


def _buffer(length: Term) -> BufferV:
    return BufferV("rows", length, None, length, Const(0))


def _fill(value: BufferV | LayoutV, pc: Formula = TRUE, origin: str = "A.fill:loop@0") -> LoopFill:
    return LoopFill(K, MAX_BS, pc, value, origin)


def test_an_entry_is_the_appended_value_at_its_index_where_the_index_is_in_range() -> None:
    stores = KeyedStores()
    stores.fill("rows", _fill(_buffer(binop("+", K, Const(2)))))
    index = binop("-", BS, Const(1))
    alternatives = list(iter_choice(stores.entry("rows", index), TRUE))
    inside = conj(cmp(">=", index, Const(0)), cmp("<", index, MAX_BS))
    back = conj(cmp("<", index, Const(0)), cmp(">=", index, binop("-", Const(0), MAX_BS)))
    assert alternatives[0] == (inside, _buffer(binop("+", index, Const(2))))
    # A negative index counts back from the end of the list's `max_bs` entries.
    position = binop("+", MAX_BS, index)
    assert alternatives[1][1] == _buffer(binop("+", position, Const(2)))
    assert set(conjuncts(back)) <= set(conjuncts(alternatives[1][0]))
    # Outside both, the read raises (`IndexError`): no alternative reaches what follows.
    assert len(alternatives) == 2


def test_a_list_without_an_entry_under_its_condition_raises_there() -> None:
    flag = Atom("A:self.keep", "self.keep")
    stores = KeyedStores()
    stores.fill("rows", _fill(_buffer(K), flag))
    value = stores.entry("rows", BS)
    assert all(flag in conjuncts(pc) for pc, _ in iter_choice(value, TRUE))
    assert not isinstance(value, UnboundV)


def test_two_loops_that_fill_one_list_are_told_apart_by_an_opaque_condition() -> None:
    stores = KeyedStores()
    stores.fill("rows", _fill(_buffer(binop("+", K, Const(2))), origin="A.cuda:loop@0"))
    stores.fill("rows", _fill(_buffer(binop("+", K, Const(1))), origin="A.cpu:loop@0"))
    found = list(iter_choice(stores.entry("rows", Const(0)), TRUE))
    lengths = [alt.length for _, alt in found if isinstance(alt, BufferV)]
    # Entry 0 of either loop (0 is no negative index: nothing counts back from the end).
    assert lengths == [Const(2), Const(1)]
    chosen = Atom("fill:rows:A.cuda:loop@0", "the loop of A.cuda:loop@0 fills `self.rows`")
    assert chosen in conjuncts(found[0][0])
    assert chosen not in conjuncts(found[1][0])


def test_a_refused_list_reads_as_unsupported_with_its_reason() -> None:
    stores = KeyedStores()
    stores.fill("rows", _fill(_buffer(K)))
    stores.refuse("rows", "`self.rows` is also used whole (handed on, aliased or iterated)")
    assert stores.entry("rows", BS) == UnknownV(
        "`self.rows` is also used whole (handed on, aliased or iterated)"
    )


def test_substitution_reaches_every_term_of_a_value() -> None:
    loc = Loc(lambda: Span("x.py", 1, 0, 1, 1))
    layout = LayoutV(Const(0), K, binop("+", K, Const(1)), loc, "arange", "arange")
    assert substitute(layout, K, BS) == LayoutV(
        Const(0), BS, binop("+", BS, Const(1)), loc, "arange", "arange"
    )
    assert substitute(IntV(binop("*", K, Const(3))), K, Const(2)) == IntV(Const(6))


def _loop(text: str) -> cst.For | cst.While:
    module = cst.parse_module(text)
    stmt = module.body[0]
    assert isinstance(stmt, (cst.For, cst.While))
    return stmt


def _reasons(text: str) -> list[str | None]:
    return [reason for _, reason in classify_appends(_loop(text)).values()]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("for k in range(n):\n    self.rows.append(k)\n", None),
        ("for k in range(0, n):\n    if self.keep:\n        self.rows.append(k)\n", None),
        (
            "for k in range(n):\n    if k % 2:\n        self.rows.append(k)\n",
            "`self.rows` is appended to under a condition that depends on the loop's iteration",
        ),
        (
            "for k in range(n):\n    odd = k % 2\n    if odd:\n        self.rows.append(k)\n",
            "`self.rows` is appended to under a condition that depends on the loop's iteration",
        ),
        (
            "for k in range(1, n):\n    self.rows.append(k)\n",
            "`self.rows` is appended to in a loop that is not over `range(...)`",
        ),
        (
            "for k in sizes:\n    self.rows.append(k)\n",
            "`self.rows` is appended to in a loop that is not over `range(...)`",
        ),
        (
            "for k in range(n):\n    for j in range(2):\n        self.rows.append(j)\n",
            "`self.rows` is appended to in nested loops",
        ),
        (
            "for k in range(n):\n    if self.skip:\n        continue\n    self.rows.append(k)\n",
            "`self.rows` is appended to in a loop that may skip an iteration (`continue`)",
        ),
        (
            "for k in range(n):\n    self.rows.append(k)\n    self.rows.append(k + 1)\n",
            "`self.rows` is appended to more than once in one iteration",
        ),
        (
            "while n:\n    self.rows.append(n)\n",
            "`self.rows` is appended to in a loop that is not over `range(...)`",
        ),
    ],
)
def test_which_appends_give_entry_k_to_iteration_k(text: str, reason: str | None) -> None:
    assert set(_reasons(text)) == {reason}


def _methods(text: str) -> list[FunctionSource]:
    source = SourceFile("m.py", text)
    (block,) = [b for b in source.blocks if b.kind == "class"]
    return list(source.class_source(block).methods.values())


@pytest.mark.parametrize(
    ("use", "reason"),
    [
        ("self.rows[bs - 1].copy_(x)", None),
        ("self.rows[bs - 1][: bs].fill_(0)", None),
        ("y = self.rows[bs - 1] if self.rows is not None else None", None),
        ("self.rows[bs - 1] = x", "`self.rows` has an entry replaced (`self.x[k] = ...`)"),
        ("self.rows.extend(x)", "`self.rows` is also changed or read by `.extend`"),
        ("self.rows.append(*x)", "`self.rows` is also changed or read by `.append`"),
        ("helper(self.rows)", "`self.rows` is also used whole (handed on, aliased or iterated)"),
        ("self.rows = []", "`self.rows` is emptied again in `replay`, which does not fill it"),
        ("self.rows = list(x)", "`self.rows` is assigned something other than an empty list"),
    ],
)
def test_a_list_used_otherwise_is_not_what_its_loop_appends(use: str, reason: str | None) -> None:
    text = (
        "class K:\n"
        "    def __init__(self):\n"
        "        self.rows = []\n"
        "    def fill(self, n):\n"
        "        for k in range(n):\n"
        "            self.rows.append(k)\n"
        "    def replay(self, bs, x):\n"
        f"        {use}\n"
    )
    found = other_uses(_methods(text), {"rows"})
    assert found.get("rows") == reason


# A list of index pointers, one per batch size, filled at set-up and read back at `bs - 1`.
ROWS = """import torch


class RowsBackend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps
        self.graph_qo_indptr = []

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        for k in range(max_bs):
            APPEND

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            REFILL
            self.forward_metadata = Plan(qo_indptr=self.graph_qo_indptr[bs - 1])
"""

RIGHT_ENTRY = "self.graph_qo_indptr.append(torch.arange(0, (k + 2) * self.ndt, step=self.ndt))"
WRONG_ENTRY = "self.graph_qo_indptr.append(torch.arange(0, (k + 2) * self.steps, step=self.steps))"


def _scan(tmp_path: Path, append: str, refill: str = "pass") -> ScanResult:
    (tmp_path / "backend.py").write_text(ROWS.replace("APPEND", append).replace("REFILL", refill))
    result = scan([str(tmp_path)])
    assert result.errors == []
    return result


def _codes(result: ScanResult) -> list[tuple[str, int, str]]:
    return sorted((f.code, f.span.line, f.mode) for f in result.findings)


def test_the_entry_read_at_bs_minus_one_is_checked(tmp_path: Path) -> None:
    wrong = _scan(tmp_path, WRONG_ENTRY)
    assert _codes(wrong) == [("IDX001", 12, "TARGET_VERIFY")]
    assert wrong.findings[0].counterexample is not None
    assert "max_bs" in wrong.findings[0].counterexample
    right = _scan(tmp_path, RIGHT_ENTRY)
    assert _codes(right) == []
    assert right.stats.unsupported == 0
    assert right.stats.proved > 0


def test_an_entry_refilled_in_place_is_not_its_first_content(tmp_path: Path) -> None:
    # Every capture overwrites the entry it hands on: the stride it was built with is never
    # read, and the refill itself is what is checked.
    refill = "self.graph_qo_indptr[bs - 1].copy_(torch.arange(0, (bs + 1) * SRC, step=SRC))"
    right = _scan(tmp_path, WRONG_ENTRY, refill.replace("SRC", "self.ndt"))
    assert _codes(right) == []
    assert right.stats.unsupported == 0
    wrong = _scan(tmp_path, RIGHT_ENTRY, refill.replace("SRC", "self.steps"))
    assert _codes(wrong) == [("IDX001", 16, "TARGET_VERIFY")]


def test_an_append_under_a_condition_on_the_index_stays_unsupported(tmp_path: Path) -> None:
    append = f"if k % 2 == 0:\n                {WRONG_ENTRY}"
    result = _scan(tmp_path, append)
    assert result.findings == []
    reasons = {n.reason for n in result.notes if n.verdict == Verdict.UNSUPPORTED}
    assert reasons == {
        "`self.graph_qo_indptr` is appended to under a condition that depends on the loop's iteration"
    }


def test_a_list_kept_only_under_a_flag_has_entries_only_there(tmp_path: Path) -> None:
    text = ROWS.replace(
        "        self.graph_qo_indptr = []\n", "        self.keep = model_runner.keep\n"
    )
    text = text.replace(
        "        for k in range(max_bs):",
        "        self.graph_qo_indptr = [] if self.keep else None\n        for k in range(max_bs):",
    )
    text = text.replace(
        "APPEND", f"if self.graph_qo_indptr is not None:\n                {WRONG_ENTRY}"
    )
    text = text.replace("REFILL", "pass")
    text = text.replace(
        "Plan(qo_indptr=self.graph_qo_indptr[bs - 1])",
        "Plan(qo_indptr=self.graph_qo_indptr[bs - 1] if self.graph_qo_indptr is not None else None)",
    )
    (tmp_path / "backend.py").write_text(text)
    result = scan([str(tmp_path)])
    assert _codes(result) == [("IDX001", 14, "TARGET_VERIFY")]
    assert result.stats.unsupported == 0


def test_a_list_two_loops_fill_holds_either_loop_s_entries(tmp_path: Path) -> None:
    # A CUDA-graph and a CPU-graph set-up fill the same list: either may be the one that did.
    cpu = (
        "\n    def init_cpu_graph_state(self, max_bs, max_num_tokens):\n"
        "        for k in range(max_bs):\n"
        "            CPU\n"
    )
    text = ROWS.replace(
        "\n    def init_forward_metadata_capture", cpu + "\n    def init_forward_metadata_capture"
    )
    text = text.replace("REFILL", "pass")
    (tmp_path / "backend.py").write_text(
        text.replace("APPEND", RIGHT_ENTRY).replace("CPU", WRONG_ENTRY)
    )
    result = scan([str(tmp_path)])
    assert _codes(result) == [("IDX001", 16, "TARGET_VERIFY")]
    (tmp_path / "backend.py").write_text(
        text.replace("APPEND", RIGHT_ENTRY).replace("CPU", RIGHT_ENTRY)
    )
    result = scan([str(tmp_path)])
    assert _codes(result) == []
    assert result.stats.unsupported == 0
