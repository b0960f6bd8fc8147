"""What a class keeps between its entry points beyond plain attributes: entries stored in a dict
attribute under a computed key (`self.graph_meta[bs] = meta` at capture, `self.graph_meta[bs]`
at replay), entries a loop appends to a list attribute, one per index (`self.starts.append(...)`
in `for k in range(max_bs)`, read back at `self.starts[bs - 1]`), and which preallocated buffers
are refilled in place, by allocation rather than by the name they are reached under."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from idxcheck.interp.choices import iter_choice, merge
from idxcheck.interp.values import (
    BoolV,
    BufferV,
    ChoiceV,
    ConstVecV,
    DictV,
    IntV,
    LayoutV,
    ObjectV,
    RankCountsV,
    RuntimeV,
    TupleV,
    UnboundV,
    UnknownV,
    Value,
)
from idxcheck.model.spans import Loc
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    Atom,
    Const,
    Formula,
    Rewriter,
    Sym,
    Term,
    binop,
    cmp,
    conj,
    disj,
    specialise_formula,
    strip,
    weaken_runtime_tests,
)


@dataclass(frozen=True)
class KeyedWrite:
    """`self.<attr>[<key>] = value` on a path of some method."""

    key: Term
    pc: Formula
    value: Value


@dataclass(frozen=True)
class LoopFill:
    """`self.<attr>.append(value)` in `for <index> in range(count)`: entry k of the list is
    `value` with k for `index`, for 0 <= k < count, where `pc` (the conditions the appends are
    under, none of which changes from one iteration to the next) holds."""

    index: Sym
    count: Term
    pc: Formula
    value: Value
    origin: str  # the loop's place, which names the choice between two loops that fill a list


@dataclass
class KeyedStores:
    """The entries each dict attribute of a class is given under an integer key, in the order
    the methods that store them were interpreted, and the entries loops append to each list
    attribute, per index (or why a list's entries are not modelled)."""

    writes: dict[str, list[KeyedWrite]] = field(default_factory=dict)
    fills: dict[str, list[LoopFill]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def record(self, attr: str, key: Term, pc: Formula, value: Value) -> None:
        entry = KeyedWrite(strip(key), pc, value)
        found = self.writes.setdefault(attr, [])
        if entry not in found:
            found.append(entry)

    def stores(self, attr: str) -> bool:
        return attr in self.writes

    def lookup(self, attr: str, key: Term, pc: Formula = TRUE, modes: Iterable[str] = ()) -> Value:
        """The entry read back under `key`: each write under the same key on its path (a later
        write over an earlier one), and no entry (a `KeyError`, so no value) where none of
        their paths was taken. The batch size a replay reads under is the one its graph was
        captured with, so a write at capture under `bs` is what a replay under `bs` reads.
        A write in a forward mode the reading path `pc` excludes is not what it reads."""
        wanted = strip(key)
        members = tuple(modes)
        result: Value = UnboundV()
        matched = False
        for write in self.writes.get(attr, []):
            if write.key == wanted:
                matched = True
                if not _feasible(conj(pc, write.pc), members):
                    continue
                result = merge(write.pc, write.value, result)
        if not matched:
            return UnknownV(f"no entry of `self.{attr}` is stored under this key")
        return result

    def fill(self, attr: str, entry: LoopFill) -> None:
        found = self.fills.setdefault(attr, [])
        if entry not in found:
            found.append(entry)

    def refuse(self, attr: str, reason: str) -> None:
        """The list's entries are not modelled (the first reason found is kept)."""
        self.refused.setdefault(attr, reason)

    def fills_list(self, attr: str) -> bool:
        return attr in self.fills or attr in self.refused

    def entry(self, attr: str, index: Term, pc: Formula = TRUE, modes: Iterable[str] = ()) -> Value:
        """Entry `index` of a list that loops fill: the appended value with `index` for the
        loop's variable where 0 <= index < count, the one `count + index` counts back to where
        -count <= index < 0 (Python's negative index), and no entry (an `IndexError`: the path
        raises) outside; a list two loops fill holds one loop's entries or the other's, as an
        opaque condition chooses (a backend fills it for the runner that owns it, a CUDA or a
        CPU graph runner, and neither loop's entries are assumed)."""
        if attr in self.refused:
            return UnknownV(self.refused[attr])
        members = tuple(modes)
        position = strip(index)
        result: Value = UnboundV()
        fills = [f for f in self.fills.get(attr, []) if _feasible(conj(pc, f.pc), members)]
        for number, fill in reversed(list(enumerate(fills))):
            count = strip(fill.count)
            inside = conj(cmp(">=", position, Const(0)), cmp("<", position, count))
            back = conj(
                cmp("<", position, Const(0)), cmp(">=", position, binop("-", Const(0), count))
            )
            value: Value = merge(
                conj(fill.pc, inside),
                substitute(fill.value, fill.index, position),
                merge(
                    conj(fill.pc, back),
                    substitute(fill.value, fill.index, binop("+", count, position)),
                    UnboundV(),
                ),
            )
            if number == len(fills) - 1:
                result = value
            else:
                chosen = Atom(
                    f"fill:{attr}:{fill.origin}", f"the loop of {fill.origin} fills `self.{attr}`"
                )
                result = merge(chosen, value, result)
        return result

    def mapped(self, convert: Refills) -> KeyedStores:
        return KeyedStores(
            {
                attr: [KeyedWrite(w.key, w.pc, convert.apply(attr, w.value)) for w in writes]
                for attr, writes in self.writes.items()
            },
            {
                attr: [
                    LoopFill(f.index, f.count, f.pc, convert.apply(attr, f.value), f.origin)
                    for f in fills
                ]
                for attr, fills in self.fills.items()
            },
            dict(self.refused),
        )


@dataclass
class Refills:
    """Buffers written in place (`buf[: bs + 1] = ...`, `buf[1:].copy_(...)`): by the place
    that allocated them where the written value resolves to a preallocated layout or buffer,
    else (a buffer reached through something not modelled) by the name it is written under;
    each with where some method writes it (`written_where`), so that where no write runs, the
    initial content is what kernels read."""

    allocations: dict[Loc, Formula] = field(default_factory=dict)
    names: dict[str, Formula] = field(default_factory=dict)

    def note(self, name: str | None, target: Value, pc: Formula, members: Iterable[str]) -> None:
        modes = tuple(members)
        resolved = False
        for alt_pc, alt in iter_choice(target, pc):
            if not _feasible(alt_pc, modes):
                continue
            if isinstance(alt, (LayoutV, BufferV)) and alt.loc is not None:
                where = disj(self.allocations.get(alt.loc, FALSE), written_where(alt_pc))
                self.allocations[alt.loc] = where
                resolved = True
            elif isinstance(alt, RuntimeV) and not alt.path.startswith("self."):
                # A tensor the runtime hands in: no preallocation of the class. (A per-forward
                # attribute of the class may hold any of its buffers.)
                resolved = True
        if not resolved and name is not None:
            self.names[name] = disj(self.names.get(name, FALSE), written_where(pc))

    def refilled(self, name: str, value: LayoutV) -> Formula:
        """Where some method writes the layout's buffer in place (FALSE: nowhere)."""
        found = self.names.get(name, FALSE)
        if value.loc is not None:
            found = disj(self.allocations.get(value.loc, FALSE), found)
        return found

    def apply(self, name: str, value: Value) -> Value:
        """A preallocated layout that the class also writes in place (a replay refills
        `cu_seqlens_q[: bs + 1]`) is a buffer where that write runs: its initial content is
        not what kernels read there, and is elsewhere (a replay that refills the buffer only
        for a ragged batch replays the preset for the others)."""
        if isinstance(value, LayoutV):
            where = self.refilled(name, value)
            if where == FALSE:
                return value
            buffer = BufferV(name, value.entries, value.loc, value.entries, Const(0))
            return merge(where, buffer, value)
        if isinstance(value, DictV):
            return DictV(tuple((k, self.apply(k, v)) for k, v in value.items))
        if isinstance(value, TupleV):
            return TupleV(tuple(self.apply(name, v) for v in value.items))
        if isinstance(value, ObjectV):
            return ObjectV(
                value.cls, tuple((k, self.apply(k, v)) for k, v in value.fields), value.origin
            )
        if isinstance(value, ChoiceV):
            return ChoiceV(tuple((c, self.apply(name, v)) for c, v in value.alts))
        return value


def written_where(pc: Formula) -> Formula:
    """The path condition of a write in place, as the run that reads the buffer can use it.
    The mode, the configuration, the batch size and opaque tests (`ragged_layout is not None`)
    are kept: a server whose first replays of a kind do not take the write reads the preset
    itself there, whatever later replays write. A comparison of a number the writing run reads
    from its own batch (`q_len_per_req > 1`, the replay's width a runtime value) means nothing
    to the reading run (the capture): it is taken as holding where the condition asks it to
    hold and as failing where it asks it to fail (by polarity, `weaken_runtime_tests`), so the
    result is implied by `pc`. A write is never placed on fewer paths than it may run on, and a
    preset is checked only where no write can reach it."""
    return weaken_runtime_tests(pc)


def _feasible(pc: Formula, modes: tuple[str, ...]) -> bool:
    """Whether some forward mode leaves `pc` satisfiable as far as the mode tells: an
    alternative of a value stored in another mode is not what a write in this one reaches."""
    if pc == FALSE:
        return False
    return not modes or any(specialise_formula(pc, mode) != FALSE for mode in modes)


def substitute(value: Value, symbol: Sym, term: Term) -> Value:
    """`value` with `term` for `symbol` wherever a term or condition of it holds one."""
    rewriter = Rewriter(term_leaf=lambda t: term if t == symbol else None)
    return _rewrite(value, rewriter)


def _rewrite(value: Value, rw: Rewriter) -> Value:
    def opt(term: Term | None) -> Term | None:
        return rw.term(term) if term is not None else None

    if isinstance(value, IntV):
        return IntV(rw.term(value.term))
    if isinstance(value, BoolV):
        return BoolV(rw.formula(value.formula))
    if isinstance(value, LayoutV):
        return LayoutV(
            rw.term(value.start),
            rw.term(value.stride),
            opt(value.entries),
            value.loc,
            value.text,
            value.source,
        )
    if isinstance(value, ConstVecV):
        return ConstVecV(rw.term(value.value), opt(value.length))
    if isinstance(value, RankCountsV):
        return RankCountsV(rw.term(value.this), value.source)
    if isinstance(value, RuntimeV):
        return RuntimeV(value.path, opt(value.length))
    if isinstance(value, BufferV):
        shape = tuple(rw.term(t) for t in value.shape) if value.shape is not None else None
        return BufferV(
            value.name,
            opt(value.length),
            value.loc,
            opt(value.capacity),
            opt(value.offset),
            shape,
        )
    if isinstance(value, TupleV):
        return TupleV(tuple(_rewrite(v, rw) for v in value.items))
    if isinstance(value, DictV):
        return DictV(tuple((k, _rewrite(v, rw)) for k, v in value.items))
    if isinstance(value, ObjectV):
        return ObjectV(
            value.cls, tuple((k, _rewrite(v, rw)) for k, v in value.fields), value.origin
        )
    if isinstance(value, ChoiceV):
        alts = [(rw.formula(c), _rewrite(v, rw)) for c, v in value.alts]
        live = [(c, v) for c, v in alts if c != FALSE]
        return ChoiceV(tuple(live)) if live else UnboundV()
    return value
