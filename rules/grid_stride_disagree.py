"""IDX006 grid-stride-disagree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import IntV, Value
from idxcheck.model.kinds import Role, Severity
from idxcheck.profiles.schema import Profile
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.terms import Const, Term, Unknown, cmp, strip, substitute_width

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

MESSAGE = "grid scalar `{name}` = `{site}` != {what} `{width}` in {mode}"


# How a claim names the stride of a pointer with one segment per request.
_STRIDE = "the stride of "


class GridStrideDisagree(Rule):
    """A grid scalar and the stride of the index pointer built with it agree.

    **Invariant.** When one metadata object (or one kernel call, or one dict) carries both a
    uniform index pointer with stride `W` and a grid scalar (`max_seq_len_q`,
    `max_extend_len`), the scalar must be `W`, for every configuration: the two describe one
    layout.

    **Why it breaks.** The two are usually computed from different expressions, and stay equal
    only as long as both are edited together: `max_seq_len_q = W + 1` wastes a block row per
    request, and a scalar taken from another width symbol (`num_steps + 1` next to a stride of
    `num_draft_tokens`) drifts apart for some configurations even when the runtime width
    happens to match one of them.

    **Example.**

        meta.cu_seqlens_q = torch.arange(0, bs * n + 1, n)
        meta.max_seq_len_q = self.speculative_num_steps + 1

    **Fix.** Derive both from the same width variable.
    """

    code = "IDX006"
    name = "grid-stride-disagree"
    roles = frozenset({Role.GRID})
    severity = Severity.WARNING
    pairs_with = Role.QO
    summary = "grid scalar differs from the stride of its own index pointer"
    message = MESSAGE

    VALID = (
        """
class Backend:
    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        n = forward_batch.spec_info.num_tokens_per_req
        if forward_batch.forward_mode.is_target_verify():
            self.meta = Metadata(cu_seqlens_q=torch.arange(0, bs * n + 1, n), max_seq_len_q=n)
""",
    )
    INVALID = (
        """
class Backend:
    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        n = forward_batch.spec_info.num_tokens_per_req
        if forward_batch.forward_mode.is_target_verify():
            self.meta = Metadata(
                cu_seqlens_q=torch.arange(0, bs * n + 1, n),
                max_seq_len_q=n + 1,  # expect: IDX006
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
        if pair is None or pair.none or isinstance(strip(pair.segment), Unknown):
            return NoClaim("no index pointer with a known stride built with it")
        if not isinstance(value, IntV):
            return NoClaim("not an integer")
        stride = substitute_width(pair.segment, width)
        return Claim(
            subject=value.term,
            holds=cmp("==", substitute_width(value.term, width), stride),
            what=f"{_STRIDE}`{pair.text}`"
            if pair.per_request
            else f"the segment length of `{pair.text}`",
            target=stride,
        )

    def replay_fields(self, value: Value, claim: Claim) -> dict[str, Term]:
        # The grid and the stride of its own pointer: a replay lays the pointer out with it.
        fields: dict[str, Term] = {"max_len": claim.subject}
        if claim.target is not None and claim.what.startswith(_STRIDE):
            fields["qo_stride"] = claim.target
            fields["segments_per_req"] = Const(1)
        return fields

    def kernel_grid(self, name: str, profile: Profile) -> tuple[str, str] | None:
        return profile.kernel_grids.get(name)
