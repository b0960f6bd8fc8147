"""IDX001 qo-indptr-stride-mismatch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing, segments
from idxcheck.interp.values import BufferV, IntV, LayoutV, NoneV, RuntimeV, UnknownV, Value
from idxcheck.model.kinds import Role
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.render import render_term
from idxcheck.sym.terms import (
    Const,
    Sym,
    Term,
    binop,
    cmp,
    const_value,
    disj,
    substitute_width,
)

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

MESSAGE = "{what} `{site}` != runtime tokens per request `{width}` in {mode}"


class IndptrStrideMismatch(Rule):
    """A uniform query index pointer must step by the tokens per request that the runtime
    lays out in that forward mode.

    **Invariant.** When a backend builds `qo_indptr` (or `cu_seqlens_q`, `query_start_loc`)
    as a uniform layout, `torch.arange(0, bs * n + 1, step=n)` or the `cumsum` of
    `torch.full((bs,), n)`, request `i` starts at `i * n`. The graph runner (or worker) of
    the same mode lays out `W` query tokens per request, so `n` must equal `W` for every
    configuration of the domain.

    **Why it breaks.** The two widths are often written in different files and agree only for
    some configurations. In EAGLE speculative decoding `speculative_num_steps + 1` equals
    `speculative_num_draft_tokens` only when `topk == 1`; with `topk > 1` every request after
    the first reads another request's tokens and some rows are never written (NaN), silently,
    under CUDA graphs.

    **Example.**

        num_tokens_per_bs = self.speculative_num_steps + 1   # runner lays out num_draft_tokens
        qo_indptr[: bs + 1] = torch.arange(0, bs * num_tokens_per_bs + 1, step=num_tokens_per_bs)

    **Fix.** Take the width from the same source as the runner, per mode:
    `self.num_draft_tokens if forward_mode.is_draft_extend_v2() else ...`, or read it per
    forward from the runtime (`spec_info.num_tokens_per_req`).
    """

    code = "IDX001"
    fixable = True
    name = "qo-indptr-stride-mismatch"
    roles = frozenset({Role.QO})
    summary = "uniform query index pointer stride differs from the runtime tokens per request"
    message = MESSAGE

    VALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            qo_indptr = torch.arange(0, (1 + bs) * self.num_draft_tokens, step=self.num_draft_tokens)
            self.forward_metadata = Metadata(qo_indptr=qo_indptr)
""",
        """
class Backend:
    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            n = forward_batch.spec_info.num_tokens_per_req
            self.forward_metadata = Metadata(qo_indptr=torch.arange(0, bs * n + 1, n))
""",
    )
    INVALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.speculative_num_steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_draft_extend_v2():
            n = self.speculative_num_steps + 1  # expect: IDX001
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * n + 1, step=n)
""",
    )

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        if isinstance(value, RuntimeV):
            return NoClaim("built from the runtime's own layout")
        if isinstance(value, UnknownV):
            return NoClaim(value.reason, unsupported=True)
        if isinstance(value, (BufferV, NoneV, IntV)):
            return NoClaim("not an index vector built here")
        if not isinstance(value, LayoutV):
            return NoClaim("not an index vector")
        shape = segments(value)
        if shape.per_request is None:
            return NoClaim(shape.problem, unsupported=not shape.misshapen)
        stride = substitute_width(value.stride, width)
        if const_value(shape.per_request) == 1:
            holds = cmp("==", stride, width)
            what = "qo_indptr stride"
        else:
            # An expanded layout (several segments per request): together they must still
            # cover the request's tokens.
            factor = substitute_width(shape.per_request, width)
            holds = cmp("==", binop("*", stride, factor), width)
            what = f"qo_indptr stride ({render_term(factor)} segments per request)"
        # A layout with no segment (the empty part of a split batch) steps by nothing.
        holds = disj(shape.empty_when, holds)
        return Claim(
            subject=value.stride,
            holds=holds,
            what=what,
            assumptions=cmp(">=", Sym("bs"), Const(2)),
        )

    def replay_fields(self, value: Value, claim: Claim) -> dict[str, Term]:
        if not isinstance(value, LayoutV):
            return {}
        fields: dict[str, Term] = {"qo_stride": value.stride}
        # A layout of several segments per request (one per token) is not the layout of one
        # segment per request that a replay builds from the stride.
        per_request = segments(value).per_request
        if per_request is not None:
            fields["segments_per_req"] = per_request
        return fields
