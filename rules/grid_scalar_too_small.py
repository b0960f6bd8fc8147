"""IDX002 grid-scalar-too-small."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import IntV, NoneV, RuntimeV, UnknownV, Value
from idxcheck.model.kinds import Role
from idxcheck.profiles.schema import Profile
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.terms import Term, cmp, substitute_width

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

MESSAGE = (
    "grid scalar `{name}` = `{site}` < {what} `{width}` in {mode}: "
    "query rows past it are not computed"
)


class GridScalarTooSmall(Rule):
    """A grid-size scalar must cover the tokens per request that the runtime lays out.

    **Invariant.** Scalars such as `max_extend_len`, `max_seq_len_q` or `max_q_len` size the
    launch grid of the attention kernel (`grid = (bs, heads, cdiv(max_len, BLOCK_M))`) and are
    frozen at CUDA-graph capture. Each program covers `BLOCK_M` query rows of one request, so
    rows past `cdiv(max_len, BLOCK_M) * BLOCK_M` are never computed: the scalar must be at
    least the runtime's tokens per request `W` in that mode. In a mode whose requests are
    packed (the profile's packed modes; in SGLang, EAGLE v1 draft extend), `W` is the most
    tokens a request can carry, which can be less than what the runner captures with.

    **Why it breaks.** The scalar is usually written next to the index pointer but from a
    separate expression; fixing one and not the other (as the first commit of the motivating
    fix did) leaves the grid too small. Whether rows are actually dropped depends on the
    kernel's `BLOCK_M`: with 128 and 8 tokens per request nothing shows, with 32 and 48 draft
    tokens a third of the rows stay unwritten.

    **Example.**

        return ForwardMetadata(max_extend_len=self.speculative_num_steps + 1, ...)

    **Fix.** Use the same width as the index pointer of that mode (`self.num_draft_tokens`
    in draft-extend v2).
    """

    code = "IDX002"
    fixable = True
    name = "grid-scalar-too-small"
    roles = frozenset({Role.GRID})
    bounds_requests = True
    pairs_with = Role.QO
    summary = "grid-size scalar smaller than the runtime tokens per request"
    message = MESSAGE

    VALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_target_verify():
            max_extend_len = self.num_draft_tokens
        else:
            max_extend_len = max(forward_batch.extend_seq_lens_cpu)
        self.forward_metadata = Metadata(max_extend_len=max_extend_len)
""",
        """
class Backend:
    def __init__(self, model_runner):
        self.num_draft_tokens = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            # One segment per token: a grid of one row per segment covers it.
            self.forward_metadata = Metadata(
                cu_seqlens_q=torch.arange(0, bs * self.num_draft_tokens + 1),
                max_seqlen_q=1,
            )
""",
    )
    INVALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.speculative_num_steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_draft_extend_v2():
            self.forward_metadata = Metadata(
                max_extend_len=self.speculative_num_steps + 1,  # expect: IDX002
            )
""",
    )

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        if isinstance(value, IntV):
            # Built with an index pointer of several segments per request (one per token, say),
            # the grid must cover one segment; otherwise, one request.
            per_request = pair is None or pair.per_request
            target = width if per_request else substitute_width(pair.segment, width)  # type: ignore[union-attr]
            return Claim(
                subject=value.term,
                holds=cmp(">=", substitute_width(value.term, width), target),
                what="runtime tokens per request"
                if per_request
                else f"the segment length of `{pair.text}`",  # type: ignore[union-attr]
                target=None if per_request else target,
            )
        if isinstance(value, RuntimeV):
            return NoClaim("computed from the runtime's own layout")
        if isinstance(value, UnknownV):
            return NoClaim(value.reason, unsupported=True)
        if isinstance(value, NoneV):
            return NoClaim("no grid scalar in this mode")
        return NoClaim("not an integer")

    def replay_fields(self, value: Value, claim: Claim) -> dict[str, Term]:
        return {"max_len": claim.subject}

    def kernel_grid(self, name: str, profile: Profile) -> tuple[str, str] | None:
        return profile.kernel_grids.get(name)

    def explain_without_kernel(self, launcher: str) -> tuple[str, ...]:
        return (f"the launcher `{launcher}` is not in the scanned tree: plain rule",)
