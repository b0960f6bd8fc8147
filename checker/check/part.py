"""What a file's analysis is checked against (`TreeFacts`, read once from the whole tree) and
what it contributes to a scan (`FilePart`): plain data, kept apart from the analysis itself, so
that a scan whose parts all come from the cache (a pre-commit run after a comment edit) loads
neither the interpreter nor the checker (bench/RESULTS.md, "Imports of a pre-commit run")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from idxcheck.model.config import Config
from idxcheck.model.findings import FileError, Finding, SiteNote
from idxcheck.model.spans import Span
from idxcheck.profiles.schema import Profile
from idxcheck.rules import REGISTRY, Rule

if TYPE_CHECKING:
    from idxcheck.check.checker import Checker
    from idxcheck.check.ports import VerdictStore
    from idxcheck.facts.algorithms import AlgorithmModel
    from idxcheck.facts.constraints import TreeConstraints
    from idxcheck.facts.kernels import Launcher
    from idxcheck.facts.modes import ModeModel
    from idxcheck.facts.runtime_model import RuntimeModel
    from idxcheck.source.index import ClassIndex, DataclassIndex, SignatureIndex
    from idxcheck.source.modules import FunctionIndex
    from idxcheck.source.tree import HitLines


@dataclass(frozen=True)
class TreeFacts:
    """What every file's classes are checked against, read once from the whole tree."""

    config: Config
    profile: Profile
    modes: ModeModel
    dataclasses: DataclassIndex
    classes: ClassIndex
    width_defs: Mapping[str, Any]
    runtime: RuntimeModel
    constraints: TreeConstraints
    launchers: dict[str, Launcher]
    hits: HitLines
    # What every file's analysis depends on beyond the file itself and the classes it looks
    # up: the tree facts' key and the kernel launchers. None when nothing is cached.
    context_key: str | None = None
    # The rules checked (a test may add its own).
    rules: tuple[type[Rule], ...] = REGISTRY
    # The module-level functions of the tree, followed where a method calls one.
    functions: FunctionIndex | None = None
    # The tree's functions with a role-named parameter.
    signatures: SignatureIndex | None = None
    # The speculative-algorithm enum of the tree (who runs the backend).
    algorithms: AlgorithmModel | None = None

    def checker(self, store: VerdictStore | None) -> Checker:
        from idxcheck.check.checker import Checker  # loaded where a file is analysed

        checker = Checker(self.profile, self.config, self.modes, self.runtime, self.rules)
        checker.launchers = self.launchers
        checker.algorithms = self.algorithms
        checker.disk = store
        return checker


@dataclass
class FilePart:
    """What one file's classes contribute to a scan: plain data, so that it can come back from
    a worker process, and merged in file order whichever process produced it."""

    parsed: bool = False
    # Places with obligations: a place reached from classes in two files (a subclass's
    # inherited method) is one site.
    sites: set[Span] = field(default_factory=set)
    errors: list[FileError] = field(default_factory=list)
    outcomes: list[SiteNote] = field(default_factory=list)
    notes: list[SiteNote] = field(default_factory=list)
    # Each refuted obligation's finding, in decision order, with the place that uses the value
    # and its name: findings of one place to fix merge across files (a subclass elsewhere
    # reaching the same line), the later ones becoming related uses.
    findings: list[tuple[Finding, Span, str, bool]] = field(default_factory=list)
    # Obligations by verdict (`Stats` names): `obligations`, `proved`, `refuted`, ... (a plain
    # dict: the cache's reader builds no other mapping, `incremental.stored`).
    counts: dict[str, int] = field(default_factory=dict)
    # The forward modes whose obligations were decided against the profile's default width
    # (no runner of the mode among the scanned files), with that width's text.
    defaults: set[tuple[str, str]] = field(default_factory=set)

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1
