"""Buffers against the tensors allocated per batch for the same writes.

A buffer preallocated for the largest captured batch (sized from `max_bs`, `max_num_tokens`)
and handed whole to a writer (a Triton kernel, a function of the tree, `.copy_` of a value)
must hold what the same writer is handed where the backend allocates a tensor per batch (the
eager path's `torch.empty((bs * topk, k))`): that allocation says how many entries the writes
need, for every batch size up to the largest. Each such pair becomes a binding of the buffer
role whose value is the per-batch allocation's size and whose bound is the buffer's, both
allocations kept as the places a finding shows."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from idxcheck.interp.choices import iter_choice
from idxcheck.interp.layouts import SIZE_SYMBOLS
from idxcheck.interp.state import Binding, Handoff
from idxcheck.interp.values import BufferV, ChoiceV, DictV, IntV, ObjectV, TupleV, Value
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.model.spans import Loc
from idxcheck.sym.terms import (
    Atom,
    Const,
    Formula,
    Not,
    RuntimeInt,
    Term,
    Unknown,
    binop,
    conj,
    conjuncts,
    disj,
    symbols_of,
    term_leaves,
    untag,
)

BATCH_SYMBOL = "bs"


def entries(shape: tuple[Term, ...]) -> Term:
    """How many entries an allocation of `shape` holds, provenance left out (a finding points
    at the place the buffer is handed, not into either allocation's expression)."""
    total: Term = Const(1)
    for dim in shape:
        total = binop("*", total, untag(dim))
    return total


def preallocated(buffer: BufferV, kept: Collection[Loc] = frozenset()) -> bool:
    """Sized from the largest captured batch, or kept in an attribute of the class (`kept`:
    where those were allocated) with a size the interpreter does not model (which may be
    that)."""
    if buffer.shape is None:
        return False
    total = entries(buffer.shape)
    if symbols_of(total) & SIZE_SYMBOLS:
        return True
    return buffer.loc in kept and _unmodelled(total)


def _unmodelled(total: Term) -> bool:
    return any(isinstance(leaf, (Unknown, RuntimeInt)) for leaf in term_leaves(total))


def per_batch(buffer: BufferV, kept: Collection[Loc], eager: bool = False) -> bool:
    """Allocated for the batch at hand: not kept in an attribute of the class (`kept`: where
    those were allocated), and sized from the batch size (not from the largest batch) or, on
    the eager path (`eager`: reached from an eager entry point), of a size the interpreter
    does not model."""
    if buffer.shape is None or buffer.loc in kept:
        return False
    total = entries(buffer.shape)
    symbols = symbols_of(total)
    if symbols & SIZE_SYMBOLS:
        return False
    return BATCH_SYMBOL in symbols or (eager and _unmodelled(total))


def handoff_bindings(
    handoffs: Sequence[Handoff],
    capture_flag: str,
    kept: Collection[Loc] = frozenset(),
    eager_entries: Collection[str] = frozenset(),
) -> list[Binding]:
    """One binding per preallocated buffer and per-batch allocation handed to the same writer
    at the same parameter, on the paths (without the capture flag, which tells the two phases
    apart) where both are handed over (`kept`: where the buffers the class keeps in its
    attributes were allocated, none of them a per-batch allocation; `eager_entries`: the
    entry points of the eager path, where an allocation of a size not modelled is one per
    batch). A pair handed to several writers (a function of the tree and the kernel it
    launches) is one binding, at the outermost place the buffer is handed over."""
    by_slot: dict[tuple[str, str], list[Handoff]] = {}
    for handoff in handoffs:
        by_slot.setdefault((handoff.writer, handoff.slot), []).append(handoff)
    found: dict[tuple[int, int], _Pair] = {}
    for group in by_slot.values():
        buffers = [
            (handoff, pc, alt)
            for handoff in group
            for pc, alt in iter_choice(handoff.value, handoff.pc)
            if isinstance(alt, BufferV) and alt.loc is not None
        ]
        graph = [b for b in buffers if preallocated(b[2], kept)]
        eager = [
            b
            for b in buffers
            if per_batch(b[2], kept, b[0].chain[:1] != () and _entry(b[0]) in eager_entries)
        ]
        for g_handoff, g_pc, g_buffer in graph:
            for e_handoff, e_pc, e_buffer in eager:
                if e_buffer.loc is g_buffer.loc:
                    continue
                key = (id(g_buffer.loc), id(e_buffer.loc))
                pc = conj(_without_flag(g_pc, capture_flag), _without_flag(e_pc, capture_flag))
                pair = found.get(key)
                if pair is None:
                    found[key] = _Pair(g_handoff, g_buffer, e_handoff, e_buffer, [pc])
                    continue
                pair.pcs.append(pc)
                if len(g_handoff.chain) < len(pair.graph.chain):
                    pair.graph, pair.eager = g_handoff, e_handoff
    return [_binding(pair) for pair in found.values()]


@dataclass
class _Pair:
    graph: Handoff
    buffer: BufferV
    eager: Handoff
    allocation: BufferV
    pcs: list[Formula]


def _binding(pair: _Pair) -> Binding:
    graph, buffer, eager, allocation = pair.graph, pair.buffer, pair.eager, pair.allocation
    assert buffer.shape is not None and allocation.shape is not None
    assert buffer.loc is not None and allocation.loc is not None
    where = f"{_slot_text(eager.slot)} of {_writer_text(eager.writer)}"
    related: list[tuple[str, str, Loc]] = [
        (
            "allocation",
            f"preallocated for the largest batch here: `{buffer.name}`",
            buffer.loc,
        ),
        (
            "allocation",
            f"allocated per batch here for the same writes: `{allocation.name}`",
            allocation.loc,
        ),
    ]
    if eager.loc is not graph.loc:
        related.append(("writer", f"handed to {where} here", eager.loc))
    return Binding(
        role=Role.BUFFER,
        name=graph.text,
        value=IntV(entries(allocation.shape)),
        pc=disj(*pair.pcs),
        loc=graph.loc,
        function=graph.function,
        chain=graph.chain,
        kind=BindingKind.HANDOFF,
        target_upper=entries(buffer.shape),
        destination=where,
        related=tuple(related),
    )


def _entry(handoff: Handoff) -> str:
    return handoff.chain[0].rsplit(".", 1)[-1]


def _writer_text(writer: str) -> str:
    if writer.endswith("[]"):
        return f"the launch of `{writer[:-2]}`"
    return f"`{writer}`"


def _slot_text(slot: str) -> str:
    if slot.startswith("#"):
        return f"argument {int(slot[1:]) + 1}"
    return slot if slot == "receiver" else f"`{slot}`"


def _without_flag(pc: Formula, flag: str) -> Formula:
    """`pc` without the capture flag: a buffer handed over at capture and a tensor handed over
    outside it are the two phases compared, not paths that exclude each other."""
    if not flag:
        return pc
    return conj(
        *(
            part
            for part in conjuncts(pc)
            if not (isinstance(part, Atom) and part.key == flag)
            and not (isinstance(part, Not) and isinstance(part.arg, Atom) and part.arg.key == flag)
        )
    )


def allocations_in(values: Collection[Value]) -> frozenset[Loc]:
    """Where the buffers among `values` (and in their tuples, dicts, objects, alternatives)
    were allocated."""
    found: set[Loc] = set()
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, BufferV) and value.loc is not None:
            found.add(value.loc)
        elif isinstance(value, ChoiceV):
            pending.extend(alt for _, alt in value.alts)
        elif isinstance(value, (DictV, ObjectV)):
            pending.extend(
                v for _, v in (value.items if isinstance(value, DictV) else value.fields)
            )
        elif isinstance(value, TupleV):
            pending.extend(value.items)
    return frozenset(found)
