"""Engine defects the robustness work found, each pinned by the smallest input that showed it."""

from __future__ import annotations

from idxcheck.app.run import scan_source
from idxcheck.model.verdicts import Verdict

HEAD = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps
        self.ndt = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
"""


def findings(body: str) -> list[tuple[str, str]]:
    result = scan_source(HEAD + body, "backend.py")
    assert result.errors == []
    return [(f.code, f.mode) for f in result.findings]


def test_match_without_a_matching_case_falls_through() -> None:
    # A `match` with no `case _` may match nothing: `n` then keeps `steps + 1`, wrong in
    # target verify once topk > 1. This was PROVED (the fall-through path was dropped).
    body = """            n = self.steps + 1
            match forward_batch.kind:
                case 1:
                    n = self.ndt
            self.qo_indptr = torch.arange(0, bs * n + 1, step=n)
"""
    assert findings(body) == [("IDX001", "TARGET_VERIFY")]
    # With `case _` every path assigns num_draft_tokens: proved; a guarded `case _` is not
    # irrefutable.
    wildcard = body.replace(
        "                    n = self.ndt\n",
        "                    n = self.ndt\n                case _:\n                    n = self.ndt\n",
    )
    assert findings(wildcard) == []
    guarded = wildcard.replace("case _:", "case _ if bs > 2:")
    assert findings(guarded) == [("IDX001", "TARGET_VERIFY")]


def test_constant_claim_after_an_unsupported_one_on_the_same_path() -> None:
    # A grid scalar whose claim is constantly false (`1 + 1` against a per-token pointer,
    # IDX006) after an UNSUPPORTED one on the same path: the reachability answer cached for the
    # first was returned as the verdict of the second ("internal error: 'bool' object has no
    # attribute 'verdict'"). Found by the mutation check on flashattention_backend.py.
    body = """            self.forward_metadata = dict(cu_seqlens_q=forward_batch.extend_seq_lens, max_seqlen_q=self.ndt)
            self.plan = dict(cu_seqlens_q=torch.arange(0, bs * self.ndt + 1), max_seqlen_q=1 + 1)
"""
    result = scan_source(HEAD + body, "backend.py")
    assert result.errors == []
    assert [(f.code, f.span.line) for f in result.findings] == [("IDX006", 13)]
    assert Verdict.UNSUPPORTED in {o.verdict for o in result.outcomes}


def test_function_too_deep_for_positions_keeps_its_finding() -> None:
    # libcst's position pass recursed past Python's limit on a 600-deep lambda in the same
    # function, outside any error boundary; the CLI's own error handler then failed to print
    # the exception (its repr recursed too) and the user got a traceback.
    body = "            junk = " + "lambda: " * 600 + "0\n"
    body += "            self.qo_indptr = torch.arange(0, bs * (self.steps + 1) + 1, step=self.steps + 1)\n"
    result = scan_source(HEAD + body, "backend.py")
    assert result.errors == []
    assert [(f.code, f.mode) for f in result.findings] == [("IDX001", "TARGET_VERIFY")]
    # The finding keeps its line when it can, else the function's `def` line.
    assert result.findings[0].span.line in (9, 13)


def test_internal_error_message_survives_an_exception_that_cannot_print_itself() -> None:
    # The CLI's last-resort handler formatted `str(exc)`; a KeyError holding a deep syntax
    # tree recursed in its repr, and the traceback reached the user.
    from idxcheck.cli.main import _describe

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RecursionError("maximum recursion depth exceeded")

    assert _describe(Unprintable()) == "(no description)"
    assert _describe(KeyError("x" * 1000)).endswith("...")
    assert _describe(ValueError("first line\nsecond")) == "first line"
