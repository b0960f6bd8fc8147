"""What a class keeps between its entry points beyond plain attributes: entries stored in a dict
attribute under a computed key (`self.graph_meta[bs] = meta` at capture, `self.graph_meta[bs]`
at replay), and which preallocated buffers are refilled in place, by allocation rather than by
the name they are reached under."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from idxcheck.interp.choices import iter_choice, merge
from idxcheck.interp.values import (
    BufferV,
    ChoiceV,
    DictV,
    LayoutV,
    ObjectV,
    RuntimeV,
    TupleV,
    UnboundV,
    UnknownV,
    Value,
)
from idxcheck.model.spans import Loc
from idxcheck.sym.terms import FALSE, TRUE, Const, Formula, Term, conj, specialise_formula, strip


@dataclass(frozen=True)
class KeyedWrite:
    """`self.<attr>[<key>] = value` on a path of some method."""

    key: Term
    pc: Formula
    value: Value


@dataclass
class KeyedStores:
    """The entries each dict attribute of a class is given under an integer key, in the order
    the methods that store them were interpreted."""

    writes: dict[str, list[KeyedWrite]] = field(default_factory=dict)

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

    def mapped(self, convert: Refills) -> KeyedStores:
        return KeyedStores(
            {
                attr: [KeyedWrite(w.key, w.pc, convert.apply(attr, w.value)) for w in writes]
                for attr, writes in self.writes.items()
            }
        )


@dataclass
class Refills:
    """Buffers written in place (`buf[: bs + 1] = ...`, `buf[1:].copy_(...)`): by the place
    that allocated them where the written value resolves to a preallocated layout or buffer,
    else (a buffer reached through something not modelled) by the name it is written under."""

    allocations: set[Loc] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def note(self, name: str | None, target: Value, pc: Formula, members: Iterable[str]) -> None:
        modes = tuple(members)
        resolved = False
        for alt_pc, alt in iter_choice(target, pc):
            if not _feasible(alt_pc, modes):
                continue
            if isinstance(alt, (LayoutV, BufferV)) and alt.loc is not None:
                self.allocations.add(alt.loc)
                resolved = True
            elif isinstance(alt, RuntimeV) and not alt.path.startswith("self."):
                # A tensor the runtime hands in: no preallocation of the class. (A per-forward
                # attribute of the class may hold any of its buffers.)
                resolved = True
        if not resolved and name is not None:
            self.names.add(name)

    def refilled(self, name: str, value: LayoutV) -> bool:
        return value.loc in self.allocations or name in self.names

    def apply(self, name: str, value: Value) -> Value:
        """A preallocated layout that the class also writes in place (a replay refills
        `cu_seqlens_q[: bs + 1]`) is a buffer: its initial content is not what kernels read."""
        if isinstance(value, LayoutV):
            if self.refilled(name, value):
                return BufferV(name, value.entries, value.loc, value.entries, Const(0))
            return value
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


def _feasible(pc: Formula, modes: tuple[str, ...]) -> bool:
    """Whether some forward mode leaves `pc` satisfiable as far as the mode tells: an
    alternative of a value stored in another mode is not what a write in this one reaches."""
    if pc == FALSE:
        return False
    return not modes or any(specialise_formula(pc, mode) != FALSE for mode in modes)
