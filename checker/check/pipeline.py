"""The scan of a loaded tree: tree facts, then each file's analysis, then the merge."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from idxcheck.check.focus import focus_files
from idxcheck.check.merge import PART_COUNTS, merge_parts
from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.check.ports import Store
from idxcheck.facts.algorithms import AlgorithmModel
from idxcheck.facts.constraints import (
    FileConstraints,
    TreeConstraints,
    read_constraints,
    read_registry,
)
from idxcheck.facts.kernels import find_launchers
from idxcheck.facts.mode_model import find_mode_model
from idxcheck.facts.modes import ModeModel
from idxcheck.facts.runners import WidthDefinitions
from idxcheck.facts.runtime_model import RuntimeModel, default_runtime_model
from idxcheck.facts.tree import RunnerReading, runtime_model_from_tree
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError, ProfileWidth, ScanResult, Stats
from idxcheck.model.progress import Event, Progress, Step, emit
from idxcheck.model.stable import digest, stable_digest
from idxcheck.profiles.schema import Profile
from idxcheck.rules import REGISTRY, Rule
from idxcheck.source.files import SourceFile
from idxcheck.source.index import ClassIndex, DataclassIndex, SignatureIndex
from idxcheck.source.modules import FunctionIndex
from idxcheck.source.tree import LoadedTree
from idxcheck.sym.terms import forget_specialisations

T = TypeVar("T")


class Executor(Protocol):
    """How the pipeline's work is run: here, in worker processes, or in the background."""

    def analyse(
        self,
        sources: Sequence[SourceFile],
        facts: TreeFacts,
        store: Store | None,
        loaded: Sequence[SourceFile],
    ) -> list[FilePart]:
        """Each source's part, in order: from the store, or analysed."""
        ...

    def in_background(self, compute: Callable[[], T], store: Store | None) -> Callable[[], T]:
        """`compute` started, perhaps in another process; the function returned gives its
        value. `compute` must leave the store alone."""
        ...


def scan_tree(
    tree: LoadedTree,
    config: Config,
    profile: Profile,
    store: Store | None,
    executor: Executor,
    rules: tuple[type[Rule], ...] = REGISTRY,
    progress: Progress | None = None,
) -> ScanResult:
    """The scan of `tree`: its result from `store` when nothing it depends on changed, else
    the tree facts, each file's analysis (run by `executor`, which tells of its progress) and
    their merge. `progress` is told when the tree facts are read."""
    if store is None:
        return _scan_tree(tree, config, profile, None, executor, rules, progress)
    try:
        key = store.tree_key(tree, config, profile)
        found = store.result(key)
        if found is not None:
            return found
        result = _scan_tree(tree, config, profile, store, executor, rules, progress)
        store.put_result(key, result)
        store.prune()
        return result
    finally:
        store.close()


FactBundle = tuple[ModeModel, RuntimeModel, TreeConstraints, list[FileError]]


def cached_tree_facts(
    tree: LoadedTree,
    config: Config,
    profile: Profile,
    store: Store | None,
    executor: Executor,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    key: str | None,
    inputs: str | None = None,
    algorithms: AlgorithmModel | None = None,
) -> tuple[FactBundle, str]:
    """The forward modes, the runners' widths and the backends' constraints of the tree, with
    the errors met reading them, and their `stable_digest`; from the store under `key`
    (the first of `tree_keys`) when no file they depend on changed, which spares a pre-commit run most
    of its parsing. Otherwise read again, the mode model, each runner file's widths and each
    file's argument checks from the store while their files and what every reading of their
    kind depends on (`inputs` of `tree_keys`, the mode model, the registry) are unchanged."""
    if store is not None and key is not None:
        cached: tuple[FactBundle, str] | None = store.value(key, tuple[FactBundle, str])
        if cached is not None:
            return cached  # else written by another layout of these classes: read again
    # Loaded where the tree facts are read: a scan that takes them from the store does not
    # load the interpreter (bench/RESULTS.md, "Imports of a pre-commit run").
    from idxcheck.interp.state import ScanContext

    errors: list[FileError] = []
    modes, mode_errors = _cached_mode_model(tree, profile, store, inputs)
    errors.extend(mode_errors)
    runners = None
    if store is not None and inputs is not None:
        try:
            runners = store.readings(
                "runner-file", digest(inputs, stable_digest(modes)), RunnerReading
            )
        except TypeError:
            pass  # a mode model the digest cannot render: read every runner
    # The runners' reading changes the widths per mode only: the phase widths the argument
    # checks are read with are the profile's, so that they can be read while the runners are.
    phase_widths = dict(default_runtime_model(profile).phase_widths)
    checks = None
    if store is not None and inputs is not None:
        try:
            names = sorted(read_registry(tree.files, profile))
            checks = store.readings(
                "constraints-file",
                digest(inputs, stable_digest(modes), stable_digest(phase_widths), *names),
                FileConstraints,
            )
        except TypeError:
            pass  # something the digest cannot render: read every file's checks

    def elsewhere(
        compute: Callable[[], list[FileConstraints]],
    ) -> Callable[[], list[FileConstraints]]:
        return executor.in_background(compute, store)

    constraints = read_constraints(
        tree.files, ScanContext(profile, modes, lambda _n: None, phase_widths), checks, elsewhere
    )
    runtime = runtime_model_from_tree(
        tree,
        profile,
        modes,
        dataclasses,
        width_defs,
        errors,
        runners,
        algorithms,
        lambda compute: executor.in_background(compute, store),
    )
    assert runtime.phase_widths == phase_widths
    bundle = (modes, runtime, constraints(), errors)
    if store is None or key is None:
        return bundle, ""  # nothing is cached: no key needs the value
    try:
        value = stable_digest(bundle)
    except TypeError:
        # An object the digest cannot render (a test fails on it, `tests/test_stable.py`):
        # key the analyses by the text the facts came from, as strict as before.
        value = f"text {key}"
    store.put_value(key, (bundle, value))
    return bundle, value


def _cached_mode_model(
    tree: LoadedTree, profile: Profile, store: Store | None, inputs: str | None
) -> tuple[ModeModel, list[FileError]]:
    """`find_mode_model`, from the store while the files that may hold the enum and `inputs`
    (which hold the profile's fallback members) are unchanged."""
    if store is None or inputs is None:
        return find_mode_model(tree, profile)
    holders = [
        f"{s.path}\0{s.text_digest()}"
        for s in tree.files
        if profile.idioms.declares_mode_enum(s.text)
    ]
    key = digest("mode-model", inputs, *holders)
    shape = tuple[ModeModel, list[FileError]]
    stored: tuple[ModeModel, list[FileError]] | None = store.reading(key, shape)
    if stored is None:
        stored = find_mode_model(tree, profile)
        store.put_reading(key, stored)
    return stored


def _scan_tree(
    tree: LoadedTree,
    config: Config,
    profile: Profile,
    store: Store | None,
    executor: Executor,
    rules: tuple[type[Rule], ...],
    progress: Progress | None = None,
) -> ScanResult:
    emit(progress, Event(Step.PARSING))
    dataclasses = DataclassIndex(tree.files)
    width_defs = WidthDefinitions(tree.files, profile.tree_width_functions)
    algorithms = AlgorithmModel(tree.files, profile)
    facts_key, inputs = (
        store.tree_keys(tree, config, profile) if store is not None else (None, None)
    )
    (modes, runtime, constraints, fact_errors), facts_value = cached_tree_facts(
        tree,
        config,
        profile,
        store,
        executor,
        dataclasses,
        width_defs,
        facts_key,
        inputs,
        algorithms,
    )
    launchers = find_launchers(tree.files, profile)
    signatures = SignatureIndex(tree.files, profile.role_of, profile.name)
    facts = TreeFacts(
        config,
        profile,
        modes,
        dataclasses,
        ClassIndex(tree.files),
        width_defs,
        runtime,
        constraints,
        launchers,
        tree.hits,
        None
        if store is None or inputs is None
        # The role-named parameters of the tree's functions give values their roles in
        # the files that call them.
        else store.context_key(digest(inputs, *signatures.digest_parts()), facts_value, launchers),
        rules,
        FunctionIndex(tree.files),
        signatures,
        algorithms,
    )
    focused = focus_files(tree, config.focus, profile) if config.focus is not None else None
    sources = [s for s in tree.files if focused is None or s.path in focused]
    forget_specialisations()
    if store is not None:
        store.close()  # a connection must not cross a fork; it reopens on next use
    # The facts are read: their trees are dropped (but for those the workers share), so that
    # workers start lean and parse what they use.
    merged = merge_parts(executor.analyse(sources, facts, store, tree.files))
    stats = Stats(
        files=tree.walked,
        parsed=merged.parsed,
        sites=merged.sites,
        **{name: merged.counts[name] for name in PART_COUNTS},
    )
    return ScanResult(
        findings=sorted(
            merged.findings, key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.mode)
        ),
        notes=sorted(
            merged.notes, key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode)
        ),
        outcomes=sorted(
            merged.outcomes,
            key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode, n.verdict),
        ),
        errors=sorted(
            [*tree.errors, *fact_errors, *merged.errors], key=lambda e: (e.path, e.message)
        ),
        stats=stats,
        mode_model_source=modes.source,
        mode_order=profile.mode_members,
        profile_widths=_profile_widths(merged.defaults, profile),
    )


def _profile_widths(defaults: set[tuple[str, str]], profile: Profile) -> tuple[ProfileWidth, ...]:
    order = {mode: index for index, mode in enumerate(profile.mode_members)}
    return tuple(
        ProfileWidth(profile.name, mode, width)
        for mode, width in sorted(defaults, key=lambda d: (order.get(d[0], len(order)), d))
    )
