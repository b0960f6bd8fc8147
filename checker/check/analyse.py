"""One file's classes analysed and checked: its sites, verdicts, notes and findings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from idxcheck.check.build import FindingBuilder
from idxcheck.check.checker import Checker, Outcome
from idxcheck.check.obligations import Obligation
from idxcheck.check.ports import VerdictStore
from idxcheck.facts.constraints import TreeConstraints
from idxcheck.facts.kernels import Launcher
from idxcheck.facts.mode_model import is_mode_enum
from idxcheck.facts.modes import ModeModel
from idxcheck.facts.runtime_model import RuntimeModel
from idxcheck.interp.classes import ClassFacts, analyse_class, analyse_function
from idxcheck.interp.interpreter import Binding, ScanContext
from idxcheck.interp.layouts import segments
from idxcheck.interp.values import IntV, LayoutV
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError, Finding, SiteNote, Stats
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.model.spans import Loc, Span
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import SourceError, SourceFile
from idxcheck.source.index import ClassIndex, DataclassIndex
from idxcheck.source.tree import HitLines
from idxcheck.sym.terms import Term, forget_specialisations


class UnsupportedSiteError(Exception):
    """Raised under the test-only `raise_on_unsupported` switch."""


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

    def checker(self, store: VerdictStore | None) -> Checker:
        checker = Checker(self.profile, self.config, self.modes, self.runtime)
        checker.launchers = self.launchers
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
    stats: Stats = field(default_factory=Stats)
    outcomes: list[SiteNote] = field(default_factory=list)
    notes: list[SiteNote] = field(default_factory=list)
    # Each refuted obligation's finding, in decision order, with the place that uses the value
    # and its name: findings of one place to fix merge across files (a subclass elsewhere
    # reaching the same line), the later ones becoming related uses.
    findings: list[tuple[Finding, Span, str, bool]] = field(default_factory=list)


def analyse_file(source: SourceFile, facts: TreeFacts, checker: Checker) -> FilePart:
    forget_specialisations()  # what a file's analysis specialises is shared within the file
    part = FilePart()
    ctx = ScanContext(
        facts.profile,
        facts.modes,
        facts.dataclasses.resolver(source),
        dict(facts.runtime.phase_widths),
        frozenset(b.name for b in source.blocks if b.kind == "def"),
        facts.width_defs,
        facts.classes.lookup,
        facts.dataclasses.file_resolver(source),
    )
    analysed: list[ClassFacts] = []
    try:
        for block in source.blocks_containing(facts.hits.get(source.path, [])):
            if facts.dataclasses.is_dataclass_block(source, block):
                continue
            if block.kind == "class":
                cls = source.class_source(block)
                part.parsed = True
                if is_mode_enum(cls, facts.modes.enum_name):
                    continue
                class_facts = analyse_class(cls, ctx)
            else:
                fn = source.function_source(block)
                part.parsed = True
                class_facts = analyse_function(fn, ctx)
            analysed.append(class_facts)
            part.errors.extend(FileError(source.path, e) for e in class_facts.errors)
    except SourceError as exc:
        part.errors.append(FileError(source.path, str(exc)))
    except RecursionError:
        part.errors.append(FileError(source.path, "expression nested too deeply to analyse"))
    check_facts(analysed, checker, facts.constraints, part)
    checker.forget_translations()
    source.forget_parses()
    forget_specialisations()
    return part


def check_facts(
    facts: list[ClassFacts],
    checker: Checker,
    constraints: TreeConstraints | None,
    part: FilePart,
) -> None:
    config = checker.config
    builder = FindingBuilder(checker.profile)
    stats = part.stats
    outcomes: list[Outcome] = []
    notes: dict[tuple[str, int, str], SiteNote] = {}
    for class_facts in facts:
        # What the tree itself rejects for this backend (an argument hook's check) narrows
        # the domain of its obligations.
        stated = constraints.for_class(class_facts.name, class_facts.bases) if constraints else []
        checker.class_constraints = stated
        checker.mode_constraints = constraints.per_mode if constraints else {}
        groups: dict[int, list[Binding]] = {}
        for binding in class_facts.bindings:
            if binding.group is not None and binding.role == Role.QO:
                groups.setdefault(id(binding.group), []).append(binding)
        accesses = [
            Binding(
                role=Role.BUFFER,
                name=access.buffer,
                value=IntV(access.end),
                pc=access.pc,
                loc=access.loc,
                function=access.function,
                chain=access.chain,
                kind=BindingKind.ACCESS,
                target_upper=access.capacity,
            )
            for access in class_facts.accesses
        ]
        for pairwise in checker.pairwise_obligations(class_facts.bindings):
            part.sites.add(pairwise.binding.loc.span)
            stats.obligations += 1
            outcome = checker.decide(pairwise)
            outcomes.append(outcome)
            part.outcomes.append(
                SiteNote(
                    pairwise.rule.code,
                    pairwise.binding.loc.span,
                    pairwise.binding.function,
                    pairwise.mode,
                    outcome.verdict,
                    outcome.reason,
                )
            )
            if outcome.verdict == Verdict.PROVED:
                stats.proved += 1
            elif outcome.verdict == Verdict.REFUTED:
                stats.refuted += 1
            elif outcome.verdict == Verdict.UNREACHABLE:
                stats.unreachable += 1
        for binding in [*class_facts.bindings, *accesses]:
            if binding.kind == BindingKind.ARGUMENT:
                # An index pointer passed by position to a function whose parameters are not
                # known: it pairs with the grid scalars of the call, but its name alone does not
                # say that it is per-request query layout.
                continue
            partners = (
                groups.get(id(binding.group), [])
                if binding.role == Role.GRID and binding.group is not None
                else []
            )
            for item in checker.obligations(binding, partners):
                if not isinstance(item, Obligation):
                    _, rule, mode, no_claim = item
                    part.sites.add(binding.loc.span)
                    if no_claim.unsupported:
                        stats.obligations += 1
                        stats.unsupported += 1
                        part.outcomes.append(
                            SiteNote(
                                rule.code,
                                binding.loc.span,
                                binding.function,
                                mode,
                                Verdict.UNSUPPORTED,
                                no_claim.reason,
                            )
                        )
                        _note(
                            notes,
                            rule.code,
                            binding.loc,
                            binding.function,
                            mode,
                            Verdict.UNSUPPORTED,
                            no_claim.reason,
                        )
                        if config.raise_on_unsupported:
                            raise UnsupportedSiteError(
                                f"{binding.loc.span.label()}: {no_claim.reason}"
                            )
                    continue
                part.sites.add(binding.loc.span)
                stats.obligations += 1
                outcome = checker.decide(item)
                outcome.kernel = checker.kernel_severity(outcome)
                outcomes.append(outcome)
                verdict = outcome.verdict
                part.outcomes.append(
                    SiteNote(
                        item.rule.code,
                        binding.loc.span,
                        binding.function,
                        item.mode,
                        verdict,
                        outcome.reason,
                    )
                )
                if verdict == Verdict.PROVED:
                    stats.proved += 1
                elif verdict == Verdict.REFUTED:
                    stats.refuted += 1
                elif verdict == Verdict.UNKNOWN:
                    stats.unknown += 1
                    _note(
                        notes,
                        item.rule.code,
                        binding.loc,
                        binding.function,
                        item.mode,
                        verdict,
                        outcome.reason or "solver budget exhausted",
                    )
                elif verdict == Verdict.UNSUPPORTED:
                    stats.unsupported += 1
                    _note(
                        notes,
                        item.rule.code,
                        binding.loc,
                        binding.function,
                        item.mode,
                        verdict,
                        outcome.reason,
                    )
                    if config.raise_on_unsupported:
                        raise UnsupportedSiteError(f"{binding.loc.span.label()}: {outcome.reason}")
                elif verdict == Verdict.UNREACHABLE:
                    stats.unreachable += 1
    for outcome in outcomes:
        if outcome.verdict != Verdict.REFUTED:
            continue
        ob = outcome.obligation
        part.findings.append(
            (
                builder.build(outcome, _companions(outcome, outcomes)),
                ob.binding.loc.span,
                ob.binding.name,
                ob.rule.mode_independent,
            )
        )
    part.notes.extend(notes.values())


def _note(
    notes: dict[tuple[str, int, str], SiteNote],
    code: str,
    loc: Loc,
    function: str,
    mode: str,
    verdict: Verdict,
    reason: str,
) -> None:
    key = (code, id(loc), mode)
    if key not in notes:
        notes[key] = SiteNote(code, loc.span, function, mode, verdict, reason)


def _companions(outcome: Outcome, outcomes: list[Outcome]) -> dict[str, Term]:
    """The index-pointer stride and the grid scalar of the same class and mode, so that a
    replay builds all of the metadata the way the code does."""
    ob = outcome.obligation
    owner = ob.binding.function.split(".")[0]
    found: dict[str, Term] = {}
    for other in outcomes:
        o = other.obligation
        if o.mode != ob.mode or o.binding.function.split(".")[0] != owner:
            continue
        if o.binding.chain[:1] != ob.binding.chain[:1] and found:
            continue
        if isinstance(o.value, LayoutV) and "qo_stride" not in found and o.rule.code == "IDX001":
            found["qo_stride"] = o.value.stride
            # A layout of several segments per request (one per token) is not the layout of
            # one segment per request that a replay builds from the stride.
            per_request = segments(o.value).per_request
            if per_request is not None:
                found["segments_per_req"] = per_request
        elif o.rule.code == "IDX002" and "max_len" not in found:
            found["max_len"] = o.claim.subject
    return found
