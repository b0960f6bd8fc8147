"""IDX004 indptr-wrong-length."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.layouts import Pairing, segments
from idxcheck.interp.values import LayoutV, Value
from idxcheck.model.kinds import Role
from idxcheck.rules.base import Claim, NoClaim, Rule
from idxcheck.sym import poly
from idxcheck.sym.terms import (
    TRUE,
    Const,
    RuntimeWidth,
    Sym,
    Term,
    binop,
    cmp,
    conj,
    symbols_of,
    term_leaves,
)

if TYPE_CHECKING:
    # Type hints only: the interpreter (and libcst) stay unloaded until a scan analyses code.
    from idxcheck.interp.state import Binding


MESSAGE = "index pointer `{site}` does not have one entry per request boundary ({what}) in {mode}"


class IndptrWrongLength(Rule):
    """An index pointer has one entry per request boundary, and a slice it is written into is
    exactly as long as it.

    **Invariant.** A uniform index pointer built from `arange(0, end, W)` has `bs + 1` entries
    (`bs` requests, one more boundary), so `end` must be `bs * W + 1` or `(bs + 1) * W` (or any
    value in between); an expanded pointer has `k * bs + 1`. The offset form
    `arange(W, W + bs * W, W)`, written into `indptr[1 : bs + 1]`, has `bs` entries. A slice
    write or `.copy_()` target must have exactly the length of what is written into it.

    **Why it breaks.** `arange(0, bs * W, W)` stops one boundary short: the kernel reads the
    last request's end from whatever the buffer held before, the preallocated content at
    capture or a stale value at replay, and under CUDA graphs nothing fails.

    **Example.**

        qo_indptr[: bs + 1] = torch.arange(0, bs * n, step=n)

    **Fix.** End the range past the last boundary: `torch.arange(0, bs * n + 1, step=n)`.
    """

    code = "IDX004"
    name = "indptr-wrong-length"
    roles = frozenset({Role.QO})
    summary = "index pointer without one entry per request boundary, or a slice of another length"
    message = MESSAGE
    mode_independent = True

    VALID = (
        """
class Backend:
    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        n = forward_batch.spec_info.num_tokens_per_req
        self.qo_indptr[: bs + 1] = torch.arange(0, bs * n + 1, step=n)
        self.qo_indptr[1 : bs + 1] = torch.arange(n, n + bs * n, n)
""",
    )
    INVALID = (
        """
class Backend:
    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        n = forward_batch.spec_info.num_tokens_per_req
        self.qo_indptr[: bs + 1] = torch.arange(0, bs * n, step=n)  # expect: IDX004
""",
    )

    def claim(
        self,
        value: Value,
        width: Term,
        pair: Pairing | None = None,
        binding: Binding | None = None,
    ) -> Claim | NoClaim:
        if not isinstance(value, LayoutV) or value.entries is None:
            return NoClaim("not a uniform index vector of known length")
        opaque = poly.Opaque((value.stride,))
        start = poly.to_poly(value.start, opaque)
        stride = poly.to_poly(value.stride, opaque)
        if start == {}:
            boundaries = binop("-", value.entries, Const(1))
        elif start is not None and start == stride:
            boundaries = value.entries
        else:
            return NoClaim("starts neither at 0 nor at its stride")
        count = poly.to_poly(boundaries, opaque)
        parts = []
        # A whole number of segments per request, in every case that has any (the decode
        # part of a split batch is empty in some).
        per_request = segments(value).per_request is not None
        what = "bs + 1 entries"
        if not per_request:
            if count is None or any(
                isinstance(leaf, RuntimeWidth) for leaf in term_leaves(boundaries)
            ):
                return NoClaim(f"the length of `{value.text}` is not modelled", unsupported=True)
            # A preallocation is sized from the largest batch, a per-forward pointer from the batch.
            batch = "max_bs" if "max_bs" in symbols_of(boundaries) else "bs"
            parts.append(cmp("==", binop("%", boundaries, Sym(batch)), Const(0)))
        if (
            binding is not None
            and binding.target_upper is not None
            and binding.source_length is not None
        ):
            lower = binding.target_lower if binding.target_lower is not None else Const(0)
            parts.append(cmp("==", binop("-", binding.target_upper, lower), binding.source_length))
            what = "the slice written into has another length"
        if not parts:
            return Claim(subject=Const(0), holds=TRUE, what=what)
        return Claim(
            subject=Const(0),
            holds=conj(*parts),
            what=what,
            assumptions=cmp(">=", Sym("bs"), Const(2)),
        )
