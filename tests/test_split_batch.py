"""A batch split into decodes and prefills (vLLM's `split_decodes_and_prefills`), read where
every request carries one width: the counts the profile states (`UNIFORM_SPLITS`), when a
call's arguments leave them to the runtime, and a layout whose segments are chosen per case."""

from __future__ import annotations

import pytest

from idxcheck.app.run import scan
from idxcheck.interp.layouts import segments
from idxcheck.interp.splits import split_threshold, uniform_split
from idxcheck.interp.values import (
    BoolV,
    ChoiceV,
    IntV,
    LayoutV,
    RuntimeV,
    TupleV,
    UnknownV,
    Value,
)
from idxcheck.model.config import Config
from idxcheck.model.spans import Loc, Span
from idxcheck.profiles.schema import load_profile
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    Atom,
    Const,
    ModeIs,
    RuntimeInt,
    RuntimeWidth,
    Sym,
    Term,
    Unknown,
    binop,
    cmp,
    ite,
    neg,
)

from .realtree import vllm_tree

SPLIT = load_profile("vllm").uniform_splits["split_decodes_and_prefills"]
BS = Sym("bs")
K = Sym("num_speculative_tokens")
LOC = Loc(lambda: Span("case.py", 1, 0, 1, 0))


def as_term(value: Value) -> Term:
    if isinstance(value, IntV):
        return value.term
    if isinstance(value, RuntimeV):
        return RuntimeInt(value.path)
    assert isinstance(value, UnknownV)
    return Unknown(value.reason)


def threshold(*args: Value, **kwargs: Value) -> Term | None:
    return split_threshold(SPLIT, [RuntimeV("common_attn_metadata"), *args], kwargs, as_term)


def test_the_profile_states_the_split_of_a_batch_of_one_width() -> None:
    assert SPLIT.below == ("requests", "none", "tokens", "none")
    assert SPLIT.above == ("none", "requests", "none", "tokens")
    runtime = TupleV((IntV(RuntimeInt("n")),) * 4)
    uniform = ModeIs(frozenset({"UNIFORM_DECODE"}))
    split = uniform_split(SPLIT, runtime, binop("+", Const(1), K), uniform)
    assert isinstance(split, ChoiceV)
    (rest, all_decodes, no_decode) = split.alts
    assert rest == (neg(uniform), runtime)
    width = binop("*", BS, RuntimeWidth())
    assert all_decodes[1] == TupleV((IntV(BS), IntV(Const(0)), IntV(width), IntV(Const(0))))
    assert no_decode[1] == TupleV((IntV(Const(0)), IntV(BS), IntV(Const(0)), IntV(width)))


def test_the_threshold_is_the_one_passed_or_the_default() -> None:
    assert threshold() == Const(1)
    assert threshold(IntV(K)) == K
    assert threshold(decode_threshold=IntV(binop("+", Const(1), K))) == binop("+", Const(1), K)
    assert threshold(treat_short_extends_as_decodes=BoolV(TRUE)) == Const(1)


@pytest.mark.parametrize(
    "kwargs",
    [
        # Whether a request is still prefilling is not in the batch's lengths.
        {"treat_short_extends_as_decodes": BoolV(FALSE)},
        {"treat_short_extends_as_decodes": BoolV(Atom("rt:self.use_pcp", "self.use_pcp"))},
        # A threshold the class writes per forward, or one not modelled.
        {"decode_threshold": RuntimeV("self.reorder_batch_threshold")},
        {"decode_threshold": UnknownV("call to `f` is not modelled")},
        # A threshold chosen by a flag that only one function's text names.
        {
            "decode_threshold": IntV(
                ite(
                    Atom("Builder._init:supports_spec", "supports_spec"),
                    binop("+", Const(1), K),
                    Const(1),
                )
            )
        },
        # One written by a function about an attribute, but keyed to that function.
        {
            "decode_threshold": IntV(
                ite(Atom("Builder._init:self.spec is None", "self.spec is None"), Const(1), K)
            )
        },
    ],
)
def test_the_split_is_left_to_the_runtime_where_a_call_does_not_say(
    kwargs: dict[str, Value],
) -> None:
    assert threshold(**kwargs) is None


def test_a_threshold_chosen_by_a_shared_condition_is_kept() -> None:
    chosen = ite(Atom("Builder:self.dcp > 1", "self.dcp > 1"), Const(1), binop("+", Const(1), K))
    assert threshold(IntV(chosen)) == chosen


def test_a_layout_of_a_part_that_may_be_empty_has_its_segments_per_request() -> None:
    below = cmp("<=", RuntimeWidth(), binop("+", Const(1), K))
    decodes = ite(below, BS, Const(0))
    part = LayoutV(Const(0), Const(1), binop("+", decodes, Const(1)), LOC, "arange", "arange")
    shape = segments(part)
    assert shape.per_request == Const(1)
    assert shape.empty_when == neg(below)
    # Two cases of different segments per request, or a runtime case: not a whole number.
    mixed = ite(below, BS, binop("*", Const(2), BS))
    assert (
        segments(
            LayoutV(Const(0), Const(1), binop("+", mixed, Const(1)), LOC, "x", "x")
        ).per_request
        is None
    )
    runtime = ite(below, BS, RuntimeInt("n"))
    assert (
        segments(
            LayoutV(Const(0), Const(1), binop("+", runtime, Const(1)), LOC, "x", "x")
        ).per_request
        is None
    )


@pytest.mark.network
@pytest.mark.slow
def test_vllm_0_13_0_decode_parts_are_decided_and_flashinfer_is_not_guessed() -> None:
    tree = vllm_tree("0.13.0")
    result = scan([str(tree)], Config(profile="auto"))
    assert result.errors == [] and result.findings == []
    common = [
        o for o in result.outcomes if o.span.path.endswith("v1/attention/backends/mla/common.py")
    ]
    # The decode part handed to `_build_decode` (`query_start_loc_cpu[: num_decodes + 1]`) is
    # checked against the phase; the UNSUPPORTED notes of the runtime's count are gone there.
    decode_part = [o for o in common if o.span.line == 999 and o.code == "IDX001"]
    assert {o.mode for o in decode_part if o.verdict.name == "PROVED"} >= {
        "UNIFORM_DECODE",
        "CAPTURE",
    }
    # FlashInfer takes speculative requests as decodes only where it decodes with TRT-LLM, both
    # from one call idxcheck does not model: its split stays the runtime's, and nothing is
    # reported on paths that never run.
    assert not [f for f in result.findings if f.span.path.endswith("flashinfer.py")]
    assert result.stats.unsupported < 700
