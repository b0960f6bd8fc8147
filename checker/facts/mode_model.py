"""The forward-mode model of the scanned tree: its mode enum read, else the profile's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.facts.modes import FLAG_PREFIX, ModeModel, Predicate, mode_model_from_profile
from idxcheck.facts.tree import mentioned_in
from idxcheck.model.findings import FileError
from idxcheck.model.spans import Span
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import ClassSource, FunctionSource, SourceError
from idxcheck.source.lazy_import import lazy_module
from idxcheck.source.tree import LoadedTree
from idxcheck.sym.terms import Atom, Formula

if TYPE_CHECKING:
    import libcst as cst

    from idxcheck.interp.state import ScanContext
    from idxcheck.interp.values import Value
else:
    cst = lazy_module("libcst")


def find_mode_model(tree: LoadedTree, profile: Profile) -> tuple[ModeModel, list[FileError]]:
    # The interpreter is loaded where the enum is read: a scan that takes the tree facts from
    # the cache imports this module for `is_mode_enum` only.
    from idxcheck.interp.state import ScanContext

    errors: list[FileError] = []
    fallback = mode_model_from_profile(profile, mentioned_in(tree.files, profile))
    for source in tree.files:
        if not profile.idioms.declares_mode_enum(source.text):
            continue
        for block in source.blocks_named(profile.idioms.mode_enum):
            try:
                cls = source.class_source(block)
            except SourceError as exc:
                errors.append(FileError(source.path, str(exc)))
                continue
            if not is_mode_enum(cls, profile.idioms.mode_enum):
                continue
            ctx = ScanContext(profile, fallback, lambda _n: None, dict(profile.phase_widths))
            model, problems = read_mode_model(cls, ctx)
            errors.extend(FileError(source.path, p) for p in problems)
            if model.members:
                return model, errors
    return fallback, errors


# ---------------------------------------------------------------------------------------------
# The ForwardMode enum


class TreeEnumOracle:
    """Reads predicates of an enum class lazily, detecting predicates that recurse."""

    def __init__(self, cls: ClassSource, ctx: ScanContext, members: tuple[str, ...]) -> None:
        self.cls = cls
        self.ctx = ctx
        self.members = members
        self.enum_name = cls.name
        self.predicates: dict[str, Predicate | None] = {}
        self.errors: list[str] = []
        self._stack: list[str] = []

    def predicate(self, name: str) -> Predicate | None:
        if name in self.predicates:
            return self.predicates[name]
        fn = self.cls.methods.get(name)
        if fn is None or name.startswith("__"):
            return None
        if name in self._stack:
            self.errors.append(
                f"predicate `{self.cls.name}.{name}` recurses ({' -> '.join([*self._stack, name])})"
            )
            return None
        self._stack.append(name)
        try:
            pred = self._read(fn)
        finally:
            self._stack.pop()
        self.predicates[name] = pred
        return pred

    def _read(self, fn: FunctionSource) -> Predicate | None:
        params: list[tuple[str, bool]] = []
        plist = fn.node.params.params
        if not plist or plist[0].name.value != "self":
            return None
        from idxcheck.interp.interpreter import ClassInterpreter
        from idxcheck.interp.state import ScanContext
        from idxcheck.interp.values import BoolV, CurrentModeV

        args: dict[str, Value] = {"self": CurrentModeV()}
        for param in [*plist[1:], *fn.node.params.kwonly_params]:
            default = False
            if param.default is not None and isinstance(param.default, cst.Name):
                default = param.default.value == "True"
            params.append((param.name.value, default))
            args[param.name.value] = BoolV(Atom(FLAG_PREFIX + param.name.value, param.name.value))
        sub_ctx = ScanContext(
            self.ctx.profile, self, self.ctx.dataclass_fields, self.ctx.phase_widths
        )
        interp = ClassInterpreter(sub_ctx, {}, self.cls.name, record=False)
        value, _ = interp.run(fn, args)
        if interp.errors:
            self.errors.extend(interp.errors)
        if isinstance(value, BoolV):
            return Predicate(fn.name, tuple(params), value.formula)
        return None

    def call(self, name: str, args: list[Formula], kwargs: dict[str, Formula]) -> Formula | None:
        pred = self.predicate(name)
        if pred is None:
            return None
        model = ModeModel(self.enum_name, self.members, {name: pred}, "")
        return model.call(name, args, kwargs)


def enum_members(cls: ClassSource) -> tuple[str, ...]:
    """An enum's members: its upper-case class attributes, in order."""
    members: list[str] = []
    body = cls.node.body.body if isinstance(cls.node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    target = small.targets[0].target
                    if isinstance(target, cst.Name) and target.value.isupper():
                        members.append(target.value)
    return tuple(members)


def read_mode_model(cls: ClassSource, ctx: ScanContext) -> tuple[ModeModel, list[str]]:
    members = enum_members(cls)
    oracle = TreeEnumOracle(cls, ctx, members)
    predicates: dict[str, Predicate] = {}
    for name in cls.methods:
        pred = oracle.predicate(name)
        if pred is not None:
            predicates[name] = pred
    span = Span(cls.file.path, cls.block.header_line, 0, cls.block.header_line, 0)
    model = ModeModel(cls.name, members, predicates, cls.file.path, span)
    return model, oracle.errors


def is_mode_enum(cls: ClassSource, enum_name: str) -> bool:
    return cls.name == enum_name and any(b in ("IntEnum", "Enum") for b in cls.base_names())
