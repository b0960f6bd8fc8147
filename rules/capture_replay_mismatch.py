"""IDX003 capture-replay-mismatch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import LayoutV, RuntimeV, Value
from idxcheck.model.kinds import Phase, Role
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.render import render_term
from idxcheck.sym.terms import FALSE, Const, Term, cmp, substitute_width

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

MESSAGE = "`{name}` is laid out with `{site}` here but {what} in {mode}"
# A replay that lays out runtime lengths (`cumsum(accept_length)`) has no term to show.
MESSAGE_RUNTIME = "`{name}` is laid out from runtime lengths here but {what} in {mode}"


class CaptureReplayMismatch(Rule):
    """The metadata built at CUDA-graph capture and the metadata refilled before replay of one
    mode describe the same per-request layout.

    **Invariant.** A graph replays the kernels it captured, with the grid and every Python
    scalar frozen at capture. The index pointer refilled before each replay must therefore have
    the layout the capture built: the same uniform stride, not a uniform stride at capture and
    the cumulative sum of per-request lengths at replay (or the reverse). The eager path of the
    same mode, when it also builds a uniform layout at the same place (one statement reached
    from both, or a write of the same kind on an object or to a call written the same way),
    must use the same width; fields of one name on two objects (a normal and an expanded
    metadata object) are two layouts. In a mode whose
    requests the runtime packs (the profile's packed modes; in SGLang, EAGLE v1 draft extend,
    where each request carries its accepted tokens), the capture runs with full requests and
    the replay with the accepted lengths, so a uniform layout at capture and the cumulative
    sum of runtime lengths at replay agree there.

    **Why it breaks.** Capture and replay often live in two methods (`..._capture_cuda_graph`,
    `..._replay_cuda_graph`) edited separately; a width changed in one keeps the other's, and
    only runs with the changed configuration replay the difference.

    **Example.**

        def init_forward_metadata_capture_cuda_graph(...):
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * ndt + 1, ndt)
        def init_forward_metadata_replay_cuda_graph(...):
            self.qo_indptr[1 : bs + 1] = torch.cumsum(spec_info.accept_length, 0)

    **Fix.** Build the layout in one helper called from both paths.
    """

    code = "IDX003"
    name = "capture-replay-mismatch"
    roles = frozenset({Role.QO})
    summary = "capture-time and replay-time (or eager) layouts of one mode differ"
    message = MESSAGE
    pairwise = True

    VALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * self.ndt + 1, self.ndt)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * self.ndt + 1, self.ndt)
""",
        """
class Backend:
    def __init__(self, model_runner):
        self.num_steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_draft_extend():
            n = self.num_steps + 1
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * n + 1, n)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend():
            self.qo_indptr[1 : bs + 1] = torch.cumsum(spec_info.accept_length[:bs], dim=0)
""",
    )
    INVALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * self.ndt + 1, self.ndt)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.qo_indptr[1 : bs + 1] = torch.cumsum(spec_info.accept_length, dim=0)  # expect: IDX003
""",
    )

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        return NoClaim("compared in pairs")

    def format_message(self, *, what: str, site: str, width: str, mode: str, name: str) -> str:
        template = self.message if site else MESSAGE_RUNTIME
        return template.format(what=what, site=site, width=width, mode=mode, name=name)

    def compare(
        self,
        other: Value,
        value: Value,
        width: Term,
        other_phase: Phase,
        *,
        packed: bool = False,
        width_lengths: bool = False,
    ) -> Claim | NoClaim:
        """`value` (replay, or eager) against `other` (capture) in one mode."""
        if isinstance(value, LayoutV) and isinstance(other, LayoutV):
            return Claim(
                subject=value.stride,
                holds=cmp(
                    "==",
                    substitute_width(value.stride, width),
                    substitute_width(other.stride, width),
                ),
                what=f"with stride `{render_term(other.stride)}` at {other_phase} (`{other.text}`)",
            )
        if (
            isinstance(value, LayoutV)
            and isinstance(other, RuntimeV)
            and other_phase == Phase.CAPTURE
        ):
            return Claim(subject=value.stride, holds=FALSE, what="from runtime lengths at capture")
        if (
            isinstance(value, RuntimeV)
            and isinstance(other, LayoutV)
            and other_phase == Phase.CAPTURE
        ):
            if packed:
                # The capture runs with every request full (a uniform layout); a replay packs
                # the requests' own lengths, which the runtime lengths describe.
                return NoClaim("the mode packs each request's tokens")
            if width_lengths:
                # The forward's extend lengths of a mode that does not pack are the runner's
                # width per request: the uniform capture's stride is checked against it.
                return NoClaim("laid out from the extend lengths, each request's width")
            return Claim(
                subject=Const(0),
                holds=FALSE,
                what=f"with the uniform stride `{render_term(other.stride)}` at capture (`{other.text}`)",
            )
        return NoClaim("not two layouts to compare")
