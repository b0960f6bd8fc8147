"""Who runs the backend: the speculative algorithm of the scanned tree, as a symbol that
backends and graph runners share.

A server runs one speculative algorithm, and a backend and the graph runners that replay it
belong to one worker (the target's model runner, or a draft worker's). A width that depends on
either (SGLang's target-verify hook gives `num_draft_tokens - 1` to a DSpark draft worker) is
therefore the same condition on both sides of an obligation: the algorithm is one opaque
condition per member of the tree's enum (`algo:MEMBER`, exactly one of them true, which
`exactly_one` states), the worker one opaque condition (`WORKER_ATOM`).

The enum is read from the tree as `ForwardMode` is (`idxcheck.facts.mode_model`): its members,
its predicate methods as formulas (`is_dspark`, `is_dflash_family`, ...); its other methods
(the width hook) are interpreted where a backend or a runner calls them. All of it is read on
first use, so that a scan whose files never name the algorithm does not parse the enum."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from idxcheck.facts.mode_model import TreeEnumOracle, enum_members
from idxcheck.facts.modes import ModeModel, applied
from idxcheck.model.kinds import ALGORITHM_ATOM, WORKER_ATOM, WORKER_TEXT
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import ClassSource, FunctionSource, SourceError, SourceFile, reading
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import (
    Atom,
    Formula,
    ModeIs,
    Not,
    Rewriter,
    conj,
    disj,
    formula_atom_keys,
)

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


def algorithm_atom(member: str, setting: str) -> Atom:
    """The opaque condition "the server runs `member`", shown as the operator sets it."""
    text = setting.replace("{}", member) if setting else f"speculative algorithm {member}"
    return Atom(ALGORITHM_ATOM + member, text)


def declares_algorithm_facts(source: SourceFile, profile: Profile) -> bool:
    """`Profile.declares_algorithm_facts` of the file's text, read once per text: the scan's
    serial part asks it of every candidate file twice (the model and the tree facts' keys),
    and its substring tests were a tenth of a pre-commit run on SGLang (bench/RESULTS.md,
    "Imports of a pre-commit run")."""
    return reading(
        source,
        "algorithm-facts\0" + profile.name,
        partial(profile.declares_algorithm_facts, source.text),
    )


class AlgorithmModel:
    """The speculative-algorithm enum of the scanned tree (`Profile.algorithm_enum`), read on
    first use: its members, its predicates over the shared `algo:` conditions, and its methods.
    A tree without the enum (or with two different classes of its name) has no members, and
    the algorithm is not modelled there (its values stay unknown)."""

    def __init__(self, files: Iterable[SourceFile], profile: Profile) -> None:
        self._files = [f for f in files if declares_algorithm_facts(f, profile)]
        self._profile = profile
        self._read = False
        self._cls: ClassSource | None = None
        self._oracle: TreeEnumOracle | None = None
        self._members: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        # What was parsed stays in this process: another reads the enum again if it needs it.
        state = dict(self.__dict__)
        state.update(_read=False, _cls=None, _oracle=None, _members=())
        return state

    @property
    def enum_name(self) -> str:
        return self._profile.algorithm_enum

    @property
    def setting(self) -> str:
        return self._profile.launch.algorithm

    @property
    def members(self) -> tuple[str, ...]:
        self._load()
        return self._members

    @property
    def none_member(self) -> str:
        """The member an unset algorithm name parses to ("" where the enum has none)."""
        none = self._profile.algorithm_none
        return none if none in self.members else ""

    def _load(self) -> None:
        if self._read:
            return
        self._read = True
        found: list[ClassSource] = []
        for source in self._files:
            for block in source.blocks_named(self.enum_name):
                try:
                    cls = source.class_source(block)
                except SourceError:
                    continue
                if any(b in ("Enum", "IntEnum") for b in cls.base_names()):
                    found.append(cls)
        # Two classes of the name are one enum only where their texts are the same (a tree
        # that vendors a copy); otherwise which one runs is not known.
        if not found or len({c.file.block_text(c.block) for c in found}) != 1:
            return
        cls = found[0]
        members = enum_members(cls)
        from idxcheck.interp.state import ScanContext  # read on first use, as the enum is

        ctx = ScanContext(self._profile, ModeModel(cls.name, (), {}, ""), lambda _n: None, {})
        self._cls = cls
        self._members = members
        self._oracle = TreeEnumOracle(cls, ctx, members)

    def predicate(
        self, name: str, args: list[Formula], kwargs: dict[str, Formula]
    ) -> Formula | None:
        """`algorithm.name(...)` as a formula over the `algo:` conditions; None where `name` is
        no predicate of the enum (a method returning something else, or none of that name)."""
        self._load()
        if self._oracle is None:
            return None
        if self._cls is None or not _flags_only(self._cls.methods.get(name)):
            return None
        pred = self._oracle.predicate(name)
        if pred is None:
            return None
        return self.over_atoms(applied(pred, args, kwargs))

    def over_atoms(self, formula: Formula) -> Formula:
        """A formula over the enum's members (`ModeIs`, as the predicates are read) as one over
        the shared `algo:` conditions."""
        members = self._members
        setting = self.setting

        def leaf(f: Formula) -> Formula | None:
            if isinstance(f, ModeIs):
                return disj(*(algorithm_atom(m, setting) for m in members if m in f.members))
            return None

        return Rewriter(formula_leaf=leaf).formula(formula)

    def draft_exclusion(self, names: set[str]) -> Formula | None:
        """For a backend registered under `names`: "no draft worker of the algorithms whose
        draft backend a factory builds runs it", where none of the names is one the factory
        builds (`Profile.draft_backend_factory`); None where that is not known (the backend
        is not registered, or the tree has no such list)."""
        factory = self._profile.draft_backend_factory
        if factory is None or not names:
            return None
        list_names, algorithms, besides = factory
        accepted = self._list(list_names)
        if accepted is None or names & (accepted | set(besides)):
            return None
        members = [m for m in algorithms if m in self.members]
        if not members:
            return None
        worker = Atom(WORKER_ATOM, WORKER_TEXT)
        return Not(conj(worker, disj(*(algorithm_atom(m, self.setting) for m in members))))

    def device_exclusion(self, names: set[str]) -> Formula | None:
        """For a backend registered under `names`, each built for one device
        (`Profile.backend_devices`): "the server runs none of the algorithms that the tree says
        do not run on those devices" (`Profile.algorithm_devices`); None where nothing is
        known (a name of no single device, no message found)."""
        devices = {self._profile.backend_devices.get(name) for name in names}
        if not names or None in devices:
            return None
        excluded: list[Formula] = []
        for member, words in self._profile.algorithm_devices.items():
            supported = self._devices(words) if member in self.members else None
            if supported is not None and not devices & supported:
                excluded.append(Not(algorithm_atom(member, self.setting)))
        return conj(*excluded) if excluded else None

    def _devices(self, words: str) -> set[str | None] | None:
        """The devices of the tree's one message that starts with `words` ("... only supports
        CUDA, NPU or XPU device"), lower case; None where there is not exactly one."""
        pattern = re.compile(rf"{re.escape(words)} ([A-Za-z, ]+?) devices?\b")
        found = {m.group(1) for f in self._files for m in pattern.finditer(f.text)}
        if len(found) != 1:
            return None
        parts = re.split(r",|\bor\b|\band\b", found.pop())
        return {part.strip().lower() for part in parts if part.strip()}

    def _list(self, names: tuple[str, ...]) -> set[str] | None:
        """A module-level list or tuple of string literals under one of `names` in the tree
        (releases renamed it: exactly one definition of one of them)."""
        alternatives = "|".join(re.escape(name) for name in names)
        pattern = re.compile(rf"^(?:{alternatives})\s*=\s*(\[[^\]]*\]|\([^)]*\))", re.MULTILINE)
        found = [m.group(1) for f in self._files for m in pattern.finditer(f.text)]
        if len(set(found)) != 1:
            return None
        try:
            value = ast.literal_eval(found[0])
        except (ValueError, SyntaxError):
            return None
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            return None
        return set(value)

    def method(self, name: str) -> FunctionSource | None:
        """A method of the enum, interpreted where it is called on the algorithm."""
        self._load()
        if self._cls is None or name.startswith("__"):
            return None
        return self._cls.methods.get(name)


def _flags_only(fn: FunctionSource | None) -> bool:
    """Whether a method may be a predicate: every parameter but `self` is a flag with a default
    of True or False (`is_extend(include_v2=False)`). A method that takes a value (the width
    hook's `num_draft_tokens`) is interpreted where it is called, not read as a formula."""
    if fn is None:
        return False
    params = fn.node.params
    if params.posonly_params or params.star_kwarg is not None:
        return False
    if isinstance(params.star_arg, cst.Param):
        return False
    rest = [*params.params[1:], *params.kwonly_params]
    return all(
        p.default is not None and getattr(p.default, "value", None) in ("True", "False")
        for p in rest
    )


def exactly_one(members: tuple[str, ...], setting: str) -> Formula:
    """One member of the enum is the server's algorithm."""
    atoms = [algorithm_atom(m, setting) for m in members]
    pairs = [Not(conj(a, b)) for i, a in enumerate(atoms) for b in atoms[i + 1 :]]
    return conj(disj(*atoms), *pairs)


def mentions_algorithm(formula: Formula) -> bool:
    """Whether the formula tests the algorithm or the worker."""
    return any(
        key.startswith(ALGORITHM_ATOM) or key == WORKER_ATOM for key in formula_atom_keys(formula)
    )
