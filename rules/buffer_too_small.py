"""IDX005 buffer-too-small."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing
from idxcheck.interp.values import IntV, Value
from idxcheck.model.kinds import Role
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.terms import Term, cmp, substitute_width, symbols_of

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

SIZE_SYMBOLS = frozenset({"max_bs", "max_num_tokens"})

MESSAGE = (
    "slice `{site}` of buffer `{name}` goes past its allocation of `{width}` entries in {mode}"
)


class BufferTooSmall(Rule):
    """A buffer preallocated once holds what every replay writes into it or reads from it.

    **Invariant.** Buffers allocated once (in `__init__` or `init_cuda_graph_state`, sized
    from `max_bs`, `max_num_tokens`, ...) are sliced on each replay (`buf[: bs * k + 1]`). For
    every batch size up to the largest captured one, the slice must end within the allocation.

    **Why it breaks.** A slice past the end of a tensor is silently shortened: a read gets
    fewer rows than the kernel is told about, a write of a longer value fails only at run time
    for some batch sizes. The usual cause is a width factor missing from the allocation: the
    draft path writes `bs * topk` rows into a buffer sized `max_bs`.

    **Example.**

        self.kv_indptr = torch.zeros((max_bs + 1,), dtype=torch.int32)
        ...
        self.kv_indptr[: bs * self.topk + 1] = ...

    **Fix.** Size the buffer for the widest layout it serves: `(max_bs * topk + 1,)`.
    """

    code = "IDX005"
    name = "buffer-too-small"
    roles = frozenset({Role.BUFFER})
    summary = "slice of a preallocated buffer past its allocation for some batch size"
    message = MESSAGE
    mode_independent = True

    VALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.kv_indptr = torch.zeros((max_bs * self.topk + 1,), dtype=torch.int32)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        self.kv_indptr[: bs * self.topk + 1] = spec_info.kv_indptr
""",
    )
    INVALID = (
        """
class Backend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.kv_indptr = torch.zeros((max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        self.kv_indptr[: bs * self.topk + 1] = spec_info.kv_indptr  # expect: IDX005
""",
    )

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        if not isinstance(value, IntV) or binding is None or binding.target_upper is None:
            return NoClaim("not a slice of a buffer")
        if not symbols_of(binding.target_upper) & SIZE_SYMBOLS:
            # Only buffers sized from the capture maximum are preallocations for every batch.
            return NoClaim("a buffer not sized from the largest captured batch")
        capacity = substitute_width(binding.target_upper, width)
        return Claim(
            subject=value.term,
            holds=cmp("<=", substitute_width(value.term, width), capacity),
            what="buffer slice",
            target=capacity,
        )
