"""Configuration constraints the scanned tree states itself.

Two forms are recognised:

- a check that rejects a combination for one attention backend, as the argument hooks write it:
  `if server_args.attention_backend == "trtllm_mha" ...: if server_args.speculative_eagle_topk
  > 1: raise ValueError(...)` (or `if "trtllm_mha" in attention_backends_of(...)`). With the
  attention registry (`@register_attention_backend("trtllm_mha")` functions that return
  `TRTLLMHAAttnBackend(runner)`), it becomes a constraint on the obligations of that backend
  class and its subclasses;
- the assignment that forces `speculative_num_draft_tokens = speculative_num_steps + 1` under
  `speculative_eagle_topk == 1`: the profile states that constraint, and the place the tree
  states it is cited;
- a constraint of one forward mode that the profile holds only where the tree states it
  (`Profile.mode_constraints`: the server arguments that keep topk > 1 off the spec v2
  workers, found by what they say), kept with the place of the statement.

Each constraint keeps the place it was read from, so a finding can cite it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from idxcheck.facts.ports import FileMemo
from idxcheck.model.spans import Span
from idxcheck.source.cstwalk import descendants
from idxcheck.source.files import FunctionSource, SourceError, SourceFile, reading
from idxcheck.source.lazy_import import lazy_module
from idxcheck.sym.terms import TRUE, Atom, Formula, formula_atoms, neg

if TYPE_CHECKING:
    import libcst as cst

    from idxcheck.interp.interpreter import ClassInterpreter
    from idxcheck.interp.state import ScanContext
    from idxcheck.profiles.schema import Profile
else:
    cst = lazy_module("libcst")

_RETURN_CLASS = re.compile(r"return\s+([A-Z][A-Za-z0-9_]*)\(")


@dataclass(frozen=True)
class TreeConstraint:
    formula: Formula  # holds for every configuration the tree accepts
    text: str
    span: Span
    backend: str | None = None  # the attention backend name it is about, if any
    # A constraint of a mode: it holds against the runners that also capture in this mode.
    runners_also_in: str = ""


@dataclass
class TreeConstraints:
    per_backend: dict[str, list[TreeConstraint]] = field(default_factory=dict)
    registry: dict[str, set[str]] = field(default_factory=dict)  # backend name -> classes
    citations: list[TreeConstraint] = field(default_factory=list)
    per_mode: dict[str, list[TreeConstraint]] = field(default_factory=dict)

    def for_class(self, name: str, bases: Iterable[str]) -> list[TreeConstraint]:
        """The constraints on a backend class: those of every backend name whose registered
        class is it or one of its bases."""
        lineage = {name, *bases}
        found: list[TreeConstraint] = []
        for backend, classes in self.registry.items():
            if classes & lineage:
                found.extend(self.per_backend.get(backend, []))
        return found

    def names_for_class(self, name: str, bases: Iterable[str]) -> set[str]:
        """The backend names whose registered class is this class or one of its bases."""
        lineage = {name, *bases}
        return {backend for backend, classes in self.registry.items() if classes & lineage}


# A file's reading: its citations, its constraints per backend and per mode.
FileConstraints = tuple[
    list[TreeConstraint], dict[str, list[TreeConstraint]], dict[str, list[TreeConstraint]]
]
# Starts a computation, perhaps in another process (`idxcheck.parallel.workers.in_background`); what
# it returns gives the computation's value.
Elsewhere = Callable[[Callable[[], list[FileConstraints]]], Callable[[], list[FileConstraints]]]
# The reading goes elsewhere from this many characters of source to parse: a process of its
# own costs a fork and the pickling of what it read.
ELSEWHERE_BYTES = 200_000


def read_registry(files: Iterable[SourceFile], profile: Profile) -> dict[str, set[str]]:
    registry: dict[str, set[str]] = {}
    for source in files:
        for name, classes in reading(source, "registry", partial(_file_registry, source, profile)):
            registry.setdefault(name, set()).update(classes)
    return registry


def _file_registry(source: SourceFile, profile: Profile) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The backends one file registers, each with the classes its function returns."""
    decorator = profile.idioms.registry_decorator
    if not profile.idioms.registers_backends(source.text):
        return ()
    register = re.compile(rf"@{re.escape(decorator)}\(\s*[\"']([A-Za-z0-9_]+)[\"']\s*\)")
    found: list[tuple[str, tuple[str, ...]]] = []
    for block in source.blocks:
        if block.kind != "def":
            continue
        header = source.header_text(block)
        match = register.search(header)
        if not match:
            continue
        body = source.block_text(block, decorators=False)
        found.append((match.group(1), tuple(_RETURN_CLASS.findall(body))))
    return tuple(found)


def constraints_forced(text: str, profile: Profile) -> re.Match[str] | None:
    """Where a file makes the assignment that forces a constraint of the profile (SGLang:
    `speculative_num_draft_tokens` to `speculative_num_steps + 1`)."""
    forced = profile.idioms.forced_assignment
    return forced.search(text) if forced is not None else None


def states_mode_constraint(text: str, profile: Profile) -> bool:
    """Whether the text states one of the profile's mode constraints (`read_constraints` reads
    it then)."""
    return any(c.stated_by in text for c in profile.mode_constraints)


def read_constraints(
    files: Iterable[SourceFile],
    ctx: ScanContext,
    readings: FileMemo | None = None,
    elsewhere: Elsewhere | None = None,
) -> Callable[[], TreeConstraints]:
    """The backends' argument checks and the forced draft-token count, read file by file
    (each file's reading from `readings` while its text and the registry are unchanged).

    Returns a function that gives them. `elsewhere`, where given, runs the reading of the
    files `readings` does not hold in another process while the caller goes on (the tree
    facts read the runners meanwhile); the readings are stored by the caller's process."""
    files = list(files)
    registry = read_registry(files, ctx.profile)
    names = set(registry)
    candidates = [
        s
        for s in files
        if ctx.profile.idioms.may_check(s.text) or states_mode_constraint(s.text, ctx.profile)
    ]
    stored: list[FileConstraints | None] = [
        readings.get(source) if readings is not None else None for source in candidates
    ]
    todo = [source for source, found in zip(candidates, stored, strict=True) if found is None]

    def read() -> list[FileConstraints]:
        return [_file_constraints(source, ctx, names) for source in todo]

    # Only the files whose text quotes a registered name are parsed: the others cost nothing
    # to read here, and a process of its own would cost more than them.
    work = sum(len(s.text) for s in todo if any(f'"{name}"' in s.text for name in names))
    pending = elsewhere(read) if elsewhere is not None and work >= ELSEWHERE_BYTES else read

    def gather() -> TreeConstraints:
        fresh = iter(pending())
        result = TreeConstraints(registry=registry)
        for source, found in zip(candidates, stored, strict=True):
            if found is None:
                found = next(fresh)
                if readings is not None:
                    readings.put(source, found)
            citations, per_backend, per_mode = found
            result.citations.extend(citations)
            for backend, stated in per_backend.items():
                result.per_backend.setdefault(backend, []).extend(stated)
            for mode, stated in per_mode.items():
                held = result.per_mode.setdefault(mode, [])
                # Stated in several files: the first (in the tree's order) is cited.
                held.extend(c for c in stated if all(c.formula != h.formula for h in held))
        return result

    return gather


def _file_constraints(source: SourceFile, ctx: ScanContext, names: set[str]) -> FileConstraints:
    result = TreeConstraints()
    forced = constraints_forced(source.text, ctx.profile)
    if forced:
        line = source.text.count("\n", 0, forced.start()) + 1
        result.citations.append(
            TreeConstraint(
                TRUE,
                ctx.profile.idioms.forced_text,
                Span(source.path, line, 0, line, 0),
            )
        )
    for stated in ctx.profile.mode_constraints:
        at = source.text.find(stated.stated_by)
        if at < 0:
            continue
        line = source.text.count("\n", 0, at) + 1
        result.per_mode.setdefault(stated.mode, []).append(
            TreeConstraint(
                stated.formula,
                f"{stated.text} in {stated.mode}: {stated.why}",
                Span(source.path, line, 0, line, 0),
                runners_also_in=stated.runners_also_in,
            )
        )
    if not any(f'"{name}"' in source.text for name in names):
        return result.citations, result.per_backend, result.per_mode
    for block in source.blocks:
        if block.kind != "def":
            continue
        text = source.block_text(block)
        if "raise" not in text or not any(f'"{name}"' in text for name in names):
            continue
        try:
            fn = source.function_source(block)
        except SourceError:
            continue
        _read_function(fn, ctx, names, result)
    return result.citations, result.per_backend, result.per_mode


def _read_function(
    fn: FunctionSource, ctx: ScanContext, names: set[str], result: TreeConstraints
) -> None:
    # The interpreter is loaded where a check is read: a scan that takes the tree facts from
    # the cache imports this module for its data and its text tests only.
    from idxcheck.interp.interpreter import ClassInterpreter

    interp = ClassInterpreter(ctx, {}, fn.name, record=False)
    for node in _walk_ifs(fn.node):
        backend = _backend_named(fn, node.test, names, ctx.profile.idioms.backend_selector)
        if backend is None:
            continue
        for inner in _walk_ifs(node):
            if inner is node or not _raises(inner.body):
                continue
            formula = _condition(interp, fn, inner.test)
            if formula is None:
                continue
            span = fn.loc(inner).span
            result.per_backend.setdefault(backend, []).append(
                TreeConstraint(
                    neg(formula),
                    f"{backend} rejects `{' '.join(fn.code(inner.test).split())}`",
                    span,
                    backend,
                )
            )


def _walk_ifs(root: cst.CSTNode) -> list[cst.If]:
    return [node for node in descendants(root) if isinstance(node, cst.If)]


def _backend_named(
    fn: FunctionSource, test: cst.BaseExpression, names: set[str], selector: str
) -> str | None:
    code = fn.code(test)
    if not selector or selector not in code:
        return None
    mentioned = [n for n in names if f'"{n}"' in code or f"'{n}'" in code]
    return mentioned[0] if len(mentioned) == 1 else None


def _raises(body: cst.BaseSuite) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Raise) for small in statement.body
        ):
            return True
    return False


def _condition(
    interp: ClassInterpreter, fn: FunctionSource, test: cst.BaseExpression
) -> Formula | None:
    """The rejected condition over configuration symbols, or None when it is not one."""
    from idxcheck.interp.state import Frame, State
    from idxcheck.interp.values import ConfigV

    env = {name: ConfigV(name) for name in interp.profile.idioms.check_config_names}
    state = State(dict(env), TRUE)
    frame = Frame(fn, (fn.qualname,), 0)
    formula = interp.condition(test, state, frame)
    if any(isinstance(a, Atom) for a in [formula]) or formula_atoms(formula):
        return None  # depends on something that is not configuration
    return formula
