"""IDX005 buffer-too-small."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import SIZE_SYMBOLS, Pairing
from idxcheck.interp.values import IntV, Value
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym.factors import without_common_factors
from idxcheck.sym.terms import (
    RuntimeInt,
    Term,
    Unknown,
    cmp,
    substitute_width,
    symbols_of,
    term_leaves,
)

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding

MESSAGE = (
    "slice `{site}` of buffer `{name}` goes past its allocation of `{width}` entries in {mode}"
)
# A buffer handed whole to a writer that a tensor allocated per batch is handed to as well.
HANDED_OVER = "buffer handed to a writer"
HANDOFF_MESSAGE = (
    "buffer `{name}` holds fewer entries than the `{width}` of the tensor allocated per batch "
    "for the same writes, in {mode}"
)


class BufferTooSmall(Rule):
    """A buffer preallocated once holds what every replay writes into it or reads from it.

    **Invariant.** Buffers allocated once (in `__init__` or `init_cuda_graph_state`, sized
    from `max_bs`, `max_num_tokens`, ...) are sliced on each replay (`buf[: bs * k + 1]`). For
    every batch size up to the largest captured one, the slice must end within the allocation.
    A buffer handed whole to a writer (a Triton kernel's launch, a function of the scanned
    tree, `.copy_` of a value) must also hold what the backend allocates per batch where it
    hands the same writer a tensor of its own at the same parameter (the eager path's
    `torch.empty((bs * topk, k))`): that allocation says how many entries the writes need.

    **Why it breaks.** A slice past the end of a tensor is silently shortened: a read gets
    fewer rows than the kernel is told about, a write of a longer value fails only at run time
    for some batch sizes. A kernel handed a buffer shorter than its writes writes past its
    end, into whatever the allocator put there. The usual cause is a width factor missing
    from the allocation: the draft path writes `bs * topk` rows into a buffer sized `max_bs`.

    **Example.**

        self.kv_indptr = torch.zeros((max_bs + 1,), dtype=torch.int32)
        ...
        self.kv_indptr[: bs * self.topk + 1] = ...

    or, against the eager path's allocation for the same kernel:

        self.rows = torch.zeros((max_bs, k))  # init_cuda_graph_state
        fill_rows[(bs,)](self.rows, ...)  # replay
        rows = torch.empty((bs * self.topk, k))  # init_forward_metadata
        fill_rows[(bs,)](rows, ...)

    **Fix.** Size the buffer for the widest layout it serves: `(max_bs * topk + 1,)`,
    `(max_bs * topk, k)`.
    """

    code = "IDX005"
    name = "buffer-too-small"
    roles = frozenset({Role.BUFFER})
    summary = (
        "preallocated buffer smaller than a slice of it, or than the per-batch allocation for "
        "the same writes, for some batch size"
    )
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
        """
class Backend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.rows = torch.zeros((max_bs * self.topk, 64), dtype=torch.int64)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        fill_rows[(bs,)](self.rows, seq_lens)

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        rows = torch.empty((bs * self.topk, 64), dtype=torch.int64)
        fill_rows[(bs,)](rows, forward_batch.seq_lens)
""",
        # A test of two operands, one not modelled: the slice is made only with topk == 1.
        """
class Backend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk
        self.graphs_on = full_graphs_enabled(model_runner)

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.kv_indptr = torch.zeros((max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if self.graphs_on and self.topk == 1:
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
        """
class Backend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.rows = torch.zeros((max_bs, 64), dtype=torch.int64)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        fill_rows[(bs,)](self.rows, seq_lens)  # expect: IDX005

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        rows = torch.empty((bs * self.topk, 64), dtype=torch.int64)
        fill_rows[(bs,)](rows, forward_batch.seq_lens)
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
        if binding.kind == BindingKind.HANDOFF:
            return self._handed_over(value, width, binding.target_upper)
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

    def _handed_over(self, value: IntV, width: Term, capacity: Term) -> Claim | NoClaim:
        """The buffer's entries against those of the tensor allocated per batch for the same
        writer, the factors both have (a dimension of the same size) taken away."""
        needed, held = without_common_factors(
            substitute_width(value.term, width), substitute_width(capacity, width)
        )
        leaves = (*term_leaves(needed), *term_leaves(held))
        unknown = next((leaf for leaf in leaves if isinstance(leaf, Unknown)), None)
        if unknown is not None:
            # Said here, not left to the solver: an unknown absorbs the term it is part of, so
            # the two sizes could be the same unknown and compare equal whatever they are.
            return NoClaim(unknown.reason, unsupported=True)
        if any(isinstance(leaf, RuntimeInt) for leaf in leaves):
            return NoClaim(
                "the entries of a buffer handed to a writer, or of the tensor allocated per "
                "batch for it, are sized from what the runtime passes in",
                unsupported=True,
            )
        return Claim(
            subject=value.term,
            holds=cmp("<=", needed, held),
            what=HANDED_OVER,
            target=value.term,
        )

    def format_message(self, *, what: str, site: str, width: str, mode: str, name: str) -> str:
        template = HANDOFF_MESSAGE if what == HANDED_OVER else self.message
        return template.format(what=what, site=site, width=width, mode=mode, name=name)
