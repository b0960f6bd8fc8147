"""Which files the tree facts read, and the runtime widths read from the tree's runners."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from idxcheck.facts.batch_modes import algorithms_not_run, modes_not_run
from idxcheck.facts.constraints import constraints_forced, states_mode_constraint
from idxcheck.facts.modes import ModeModel, mentioned_members
from idxcheck.facts.ports import FileMemo
from idxcheck.facts.runners import read_runner, runner_blocks
from idxcheck.facts.runtime_model import (
    RunnerWidth,
    RuntimeModel,
    default_runtime_model,
    packed_widths,
)
from idxcheck.model.findings import FileError
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import Block, SourceError, SourceFile, reading
from idxcheck.source.index import DataclassIndex
from idxcheck.source.prefilter import feeds_batch_modes
from idxcheck.source.tree import LoadedTree
from idxcheck.sym.terms import Term

if TYPE_CHECKING:
    from idxcheck.interp.state import AlgorithmOracle

_QUOTED_NAMES: dict[frozenset[str], re.Pattern[str]] = {}


def _quotes_any(text: str, names: set[str]) -> bool:
    """Whether `"name"` occurs in `text` for one of `names`: one search for a pattern that
    starts with the quote (found at memchr speed) instead of one search per name."""
    key = frozenset(names)
    pattern = _QUOTED_NAMES.get(key)
    if pattern is None:
        alternatives = "|".join(re.escape(n) for n in sorted(key, key=len, reverse=True))
        pattern = _QUOTED_NAMES[key] = re.compile(f'"(?:{alternatives})"')
    return bool(key) and pattern.search(text) is not None


def feeds_tree_facts(source: SourceFile, profile: Profile, registry_names: set[str]) -> bool:
    """Whether the tree facts may read this file beyond its dataclasses: a text test that
    holds for every file `find_mode_model`, `runtime_model_from_tree` and `read_constraints`
    read from (each of them tests at least this much before reading). It decides both what
    keys the cached tree facts and when a focused scan must analyse every file."""
    if reading(
        source, "feeds\0algorithm\0" + profile.name, partial(_feeds_by_text, source, profile)
    ):
        return True
    # Whether the file quotes a registered backend's name depends on the tree's registry.
    return _may_check(source, profile) and _quotes_any(source.text, registry_names)


def _may_check(source: SourceFile, profile: Profile) -> bool:
    """Whether the file can hold an argument check (`read_constraints`)."""
    return reading(
        source,
        "may-check",
        lambda: profile.idioms.may_check(source.text),
    )


def _feeds_by_text(source: SourceFile, profile: Profile) -> bool:
    """`feeds_tree_facts` but for the backend names the file may quote."""
    text = source.text
    return (
        profile.idioms.declares_mode_enum(text)
        or profile.idioms.registers_backends(text)
        or (_may_check(source, profile) and constraints_forced(text, profile) is not None)
        or states_mode_constraint(text, profile)
        or feeds_batch_modes(source, profile)
        or any(f"def {name}" in text for name in profile.tree_width_functions)
        or profile.declares_algorithm_facts(text)
        or bool(runner_blocks(source, profile.runner_width_attrs, profile.config_classes))
    )


def defines_any(source: SourceFile, functions: Iterable[str]) -> bool:
    return any(f"def {name}" in source.text for name in functions)


def mentioned_in(files: Iterable[SourceFile], profile: Profile) -> set[str]:
    """The profile's members of one generation only that the files mention."""
    found: set[str] = set()
    for source in files:
        found.update(
            reading(source, "mentions\0" + profile.name, partial(_mentions, source, profile))
        )
    return found


def _mentions(source: SourceFile, profile: Profile) -> tuple[str, ...]:
    return mentioned_members(profile, source.text)


RunnerReading = tuple[list[RunnerWidth], list[FileError]]


# Starts a reading of runner files, perhaps in another process
# (`idxcheck.parallel.workers.in_background`); what it returns gives the readings.
RunnersElsewhere = Callable[[Callable[[], list[RunnerReading]]], Callable[[], list[RunnerReading]]]


def runtime_model_from_tree(
    tree: LoadedTree,
    profile: Profile,
    modes: ModeModel,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    errors: list[FileError],
    runners: FileMemo | None = None,
    algorithms: AlgorithmOracle | None = None,
    elsewhere: RunnersElsewhere | None = None,
) -> RuntimeModel:
    """Runner widths read from the scanned tree for the modes it has runners of; where it has
    none, the widths its configuration class states; the profile's defaults for the other
    modes. The errors met reading them go to `errors`. `elsewhere`, where given, reads some of
    the runner files `runners` does not hold in another process meanwhile (`_read_away`)."""
    default = default_runtime_model(profile)
    read: dict[str, list[RunnerWidth]] = {}
    stated: dict[str, list[RunnerWidth]] = {}
    files: list[tuple[SourceFile, list[Block], RunnerReading | None]] = []
    for source in tree.files:
        blocks = runner_blocks(source, profile.runner_width_attrs, profile.config_classes)
        if blocks:
            files.append((source, blocks, runners.get(source) if runners is not None else None))

    def read_files(indices: list[int]) -> list[RunnerReading]:
        return [
            _read_runners(
                files[i][0],
                files[i][1],
                profile,
                modes,
                dataclasses,
                width_defs,
                default.phase_widths,
                algorithms,
            )
            for i in indices
        ]

    todo = [i for i, (_, _, found) in enumerate(files) if found is None]
    away: list[int] = []
    pending = None
    if elsewhere is not None:
        away = _read_away(
            {i: sum(len(files[i][0].block_text(b)) for b in files[i][1]) for i in todo}
        )
        if away:
            pending = elsewhere(partial(read_files, away))
    here = [i for i in todo if i not in away]
    fresh = dict(zip(here, read_files(here), strict=True))
    if pending is not None:
        fresh.update(zip(away, pending(), strict=True))
    for index, (source, _, stored) in enumerate(files):
        reading = stored if stored is not None else fresh[index]
        if stored is None and runners is not None:
            runners.put(source, reading)
        widths, found_errors = reading
        errors.extend(found_errors)
        for width in widths:
            if width.mode in modes.members:
                into = stated if width.from_config else read
                into.setdefault(width.mode, []).append(width)
    widths_by_mode = dict(default.widths)
    # What the configuration states (`VllmConfig.uniform_decode_query_len`) is what the
    # runners read: it stands for them in a mode none of the tree's runners states.
    for mode, found in {**stated, **read}.items():
        widths_by_mode[mode] = tuple(found)
    most = {
        mode: packed_widths(packed, widths_by_mode.get(mode, ()))
        for mode, packed in profile.packed_modes.items()
    }
    not_run = modes_not_run(tree.files, profile, modes.members)
    return RuntimeModel(
        widths_by_mode,
        default.phase_widths,
        most=most,
        not_run=not_run,
        algorithms_not_run=algorithms_not_run(tree.files, profile, modes.members),
    )


def _read_away(weights: Mapping[int, int]) -> list[int]:
    """The runner files (by index, with the characters of their runner classes) read in
    another process while this one reads the rest: where there are two or more and enough to
    read for a process to pay off (`RUNNER_ELSEWHERE_BYTES`), the heaviest first to the side
    with less, this process's first: on SGLang 0.5.23 the decode runner is read here and the
    five others elsewhere, on vLLM 0.33.0 the model runner here and the configuration and the
    dispatcher elsewhere (bench/RESULTS.md, "Where a cold scan's Python time went")."""
    if len(weights) < 2 or sum(weights.values()) < RUNNER_ELSEWHERE_BYTES:
        return []
    here: list[int] = []
    away: list[int] = []
    sizes = [0, 0]
    for index in sorted(weights, key=lambda i: (-weights[i], i)):
        side = 0 if sizes[0] <= sizes[1] else 1
        (here if side == 0 else away).append(index)
        sizes[side] += weights[index]
    return sorted(away)


# The runners go partly elsewhere from this many characters of runner classes to read: a process
# of its own costs a fork and the pickling of what it read.
RUNNER_ELSEWHERE_BYTES = 100_000


def _read_runners(
    source: SourceFile,
    blocks: list[Block],
    profile: Profile,
    modes: ModeModel,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    phase_widths: Mapping[str, Term],
    algorithms: AlgorithmOracle | None = None,
) -> RunnerReading:
    """The widths of one file's runner classes, with the errors met reading them."""
    # Loaded where a runner is read: a scan that takes the tree facts from the cache imports
    # this module for its text tests only.
    from idxcheck.interp.state import ScanContext

    ctx = ScanContext(
        profile,
        modes,
        dataclasses.resolver(source),
        dict(phase_widths),
        frozenset(b.name for b in source.blocks if b.kind == "def"),
        width_defs,
        algorithms=algorithms,
    )
    widths: list[RunnerWidth] = []
    errors: list[FileError] = []
    for block in blocks:
        try:
            facts = read_runner(source.class_source(block), ctx)
        except SourceError as exc:
            errors.append(FileError(source.path, str(exc)))
            continue
        except RecursionError:
            errors.append(FileError(source.path, "expression nested too deeply to analyse"))
            continue
        errors.extend(FileError(path, message) for path, message in facts.errors)
        widths.extend(facts.widths)
    return widths, errors
