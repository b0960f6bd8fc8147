"""One file's classes analysed and checked: its sites, verdicts, notes and findings."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from idxcheck.check.build import FindingBuilder
from idxcheck.check.checker import Checker, Outcome
from idxcheck.check.obligations import Obligation, Unclaimed
from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.facts.algorithms import AlgorithmModel
from idxcheck.facts.constraints import TreeConstraints
from idxcheck.facts.mode_model import is_mode_enum
from idxcheck.facts.readers import ClassReaders
from idxcheck.interp.classes import ClassFacts, analyse_class, analyse_function
from idxcheck.interp.state import Binding, ScanContext
from idxcheck.model.config import Config
from idxcheck.model.findings import Consumer, FileError, SiteNote
from idxcheck.model.kinds import BindingKind, Role
from idxcheck.model.spans import Loc
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import Profile
from idxcheck.rules import Rule
from idxcheck.source.files import Block, ClassSource, SourceError, SourceFile, strip_comments
from idxcheck.sym.terms import Formula, Term, conj, forget_specialisations


class UnsupportedSiteError(Exception):
    """Raised under the test-only `raise_on_unsupported` switch."""


@dataclass
class BlockShare:
    """One analysed block's share of its file's part (what its analysis and its checks
    added), the lookups its analysis made (`recording`), and whether it came from the cache
    rather than from this analysis."""

    block: Block
    part: FilePart
    classes: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    reused: bool = False


@dataclass
class AnalysedFile:
    """A file's part (its blocks' shares merged in order, then the errors that cut the
    analysis or the checks short) and the shares themselves."""

    part: FilePart
    shares: list[BlockShare]
    cut_short: bool  # an error ended the analysis or the checks before the last block


def analyse_blocks(
    source: SourceFile,
    facts: TreeFacts,
    checker: Checker,
    reused: Mapping[Block, FilePart] | None = None,
    record: bool = False,
) -> AnalysedFile:
    """The file's blocks analysed and checked together, each one's additions kept as its
    share. A block in `reused` is neither analysed nor checked: its share is the one given.
    `record`: each share's lookups of classes and functions are recorded."""
    forget_specialisations()  # what a file's analysis specialises is shared within the file
    reused = reused or {}
    rest = FilePart()
    ctx = ScanContext(
        facts.profile,
        facts.modes,
        facts.dataclasses.resolver(source),
        dict(facts.runtime.phase_widths),
        frozenset(b.name for b in source.blocks if b.kind == "def"),
        facts.width_defs,
        facts.classes.lookup,
        facts.dataclasses.file_resolver(source),
        facts.functions,
        facts.signatures.resolver(source) if facts.signatures is not None else _no_signature,
        facts.algorithms,
    )
    analysed: list[ClassFacts] = []
    shares: list[BlockShare] = []
    share_of: dict[int, FilePart] = {}  # by id of each ClassFacts
    # Each class's source, for the readers analysis of the classes with findings.
    sources: dict[int, ClassSource] = {}
    cut_short = False
    try:
        for block in analysed_blocks(source, facts):
            stored = reused.get(block)
            if stored is not None:
                shares.append(BlockShare(block, stored, reused=True))
                continue
            share = BlockShare(block, FilePart())
            shares.append(share)
            with _recording(facts, record) as (classes, functions):
                if block.kind == "class":
                    cls = source.class_source(block)
                    share.part.parsed = True
                    if is_mode_enum(cls, facts.modes.enum_name):
                        continue
                    class_facts = analyse_class(cls, ctx)
                    sources[id(class_facts)] = cls
                else:
                    fn = source.function_source(block)
                    share.part.parsed = True
                    class_facts = analyse_function(fn, ctx)
            share.classes, share.functions = classes, functions
            analysed.append(class_facts)
            share_of[id(class_facts)] = share.part
            share.part.errors.extend(FileError(source.path, e) for e in class_facts.errors)
    except SourceError as exc:
        rest.errors.append(FileError(source.path, str(exc)))
        cut_short = True
    except RecursionError:
        rest.errors.append(FileError(source.path, "expression nested too deeply to analyse"))
        cut_short = True
    found: dict[int, ClassReaders] = {}

    def consumer(class_facts: ClassFacts, binding: Binding, mode: str) -> Consumer | None:
        cls = sources.get(id(class_facts))
        if cls is None:
            return None
        readers = found.get(id(cls))
        if readers is None:
            readers = found[id(cls)] = ClassReaders(cls, ctx)
        return readers.consumer(binding, mode)

    try:
        check_facts(analysed, checker, facts.constraints, rest, consumer, lambda c: share_of[id(c)])
    except SourceError as exc:
        rest.errors.append(FileError(source.path, str(exc)))
        cut_short = True
    except RecursionError:
        rest.errors.append(FileError(source.path, "expression nested too deeply to analyse"))
        cut_short = True
    checker.forget_translations()
    source.forget_parses()
    forget_specialisations()
    return AnalysedFile(merge_shares([*(s.part for s in shares), rest]), shares, cut_short)


def analysed_blocks(source: SourceFile, facts: TreeFacts) -> list[Block]:
    """The blocks of the file that are analysed: those the prefilter hit, less dataclasses
    and the module-level functions other analysed blocks call."""
    blocks = source.blocks_containing(facts.hits.get(source.path, []))
    called = called_functions(source, blocks) if facts.functions is not None else set()
    return [
        block
        for block in blocks
        if not facts.dataclasses.is_dataclass_block(source, block)
        # a helper: its sites get the modes of its callers here
        and not (block.kind == "def" and block.name in called)
    ]


@contextmanager
def _recording(facts: TreeFacts, record: bool) -> Iterator[tuple[set[str], set[str]]]:
    if not record:
        yield set(), set()
        return
    with facts.classes.recording() as classes:
        if facts.functions is None:
            yield classes, set()
            return
        with facts.functions.recording() as functions:
            yield classes, functions


def merge_shares(parts: Iterable[FilePart]) -> FilePart:
    """Parts of one file in order, as one: lists joined, sets and counts added up."""
    merged = FilePart()
    for part in parts:
        merged.parsed = merged.parsed or part.parsed
        merged.sites |= part.sites
        merged.errors.extend(part.errors)
        merged.outcomes.extend(part.outcomes)
        merged.notes.extend(part.notes)
        merged.findings.extend(part.findings)
        for name, count in part.counts.items():
            merged.counts[name] = merged.counts.get(name, 0) + count
        merged.defaults |= part.defaults
    return merged


def called_functions(source: SourceFile, blocks: list[Block]) -> set[str]:
    """The module-level functions of the file that the other analysed blocks reach by calls:
    they are followed from there (`interp.functions`), not analysed on their own with
    parameters nobody passes, as a helper method is not an entry point of its class. Functions
    only a cycle of calls reaches stay entry points."""
    defined = {b.name for b in source.blocks if b.kind == "def"}
    if not defined:
        return set()
    calls: dict[str, set[str]] = {}
    for block in blocks:
        text = strip_comments(source.block_text(block, decorators=False))
        found = {m.group(1) for m in _CALLED.finditer(text)} & defined
        calls.setdefault(block.name, set()).update(found - {block.name})
    called = set().union(*calls.values())
    pending = [name for name in calls if name not in called]
    reached: set[str] = set()
    while pending:
        for callee in calls.get(pending.pop(), set()):
            if callee not in reached:
                reached.add(callee)
                pending.append(callee)
    return reached


_CALLED = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z_0-9]*)\s*\(")


def _no_signature(_name: str) -> None:
    return None


def drafter_domain(profile: Profile, class_facts: ClassFacts) -> tuple[Formula, ...]:
    """The profile's constraints of drafters, where the class or one of its bases is one."""
    if not profile.drafter_domain or not any(
        re.search(profile.draft_runner, name) for name in (class_facts.name, *class_facts.bases)
    ):
        return ()
    return tuple(c.formula for c in profile.drafter_domain)


def check_facts(
    facts: list[ClassFacts],
    checker: Checker,
    constraints: TreeConstraints | None,
    part: FilePart,
    consumer: Callable[[ClassFacts, Binding, str], Consumer | None] | None = None,
    share_of: Callable[[ClassFacts], FilePart] | None = None,
) -> None:
    """Each class's obligations decided, counted and noted in `part`, then the findings of
    the refuted ones built, in decision order. `share_of`: the part each class's additions go
    to instead (a note to the class that made it first, a finding to its obligation's)."""
    outcomes: list[Outcome] = []
    # Each outcome's class (by the outcome's identity), for the attributes a fix may use and
    # for the readers of its value.
    owners: dict[int, ClassFacts] = {}
    notes: dict[tuple[str, int, str], SiteNote] = {}
    noted: dict[tuple[str, int, str], FilePart] = {}  # the part each note goes to
    for class_facts in facts:
        share = share_of(class_facts) if share_of is not None else part
        made = len(notes)
        # What the tree itself rejects for this backend (an argument hook's check) narrows
        # the domain of its obligations.
        stated = constraints.for_class(class_facts.name, class_facts.bases) if constraints else []
        checker.class_constraints = stated
        checker.class_domain = drafter_domain(checker.profile, class_facts)
        checker.mode_constraints = constraints.per_mode if constraints else {}
        checker.draft_exclusion = (
            _who_never_runs(
                checker.algorithms,
                constraints.names_for_class(class_facts.name, class_facts.bases),
            )
            if checker.algorithms is not None and constraints is not None
            else None
        )
        for pairwise in checker.pairwise_obligations(class_facts.bindings):
            outcome = checker.decide(pairwise, kernel_aware=False)
            _count(share, pairwise.binding, pairwise.rule.code, pairwise.mode, outcome)
            _note_outcome(share, pairwise, outcome, notes, checker.config)
            outcomes.append(outcome)
            owners[id(outcome)] = class_facts
        groups = _groups(class_facts.bindings)
        for binding in [
            *class_facts.bindings,
            *class_facts.access_bindings(),
            *class_facts.handoffs,
        ]:
            if binding.kind == BindingKind.ARGUMENT:
                continue  # a partner of the grid scalars of its call only
            for item in checker.obligations(binding, groups):
                if isinstance(item, Unclaimed):
                    _unclaimed(share, item, notes, checker.config)
                    continue
                outcome = checker.decide(item)
                _count(share, binding, item.rule.code, item.mode, outcome)
                _note_outcome(share, item, outcome, notes, checker.config)
                outcomes.append(outcome)
                owners[id(outcome)] = class_facts
        for key in list(notes)[made:]:
            noted[key] = share
    builder = FindingBuilder(
        checker.profile, checker.modes, constraints.registry if constraints else None
    )
    # The modes each function is checked in: a fix in one mode keeps the others' code.
    function_modes: dict[str, set[str]] = {}
    for outcome in outcomes:
        function_modes.setdefault(outcome.obligation.binding.function, set()).add(
            outcome.obligation.mode
        )
    for outcome in outcomes:
        if outcome.verdict != Verdict.REFUTED:
            continue
        ob = outcome.obligation
        owner = owners.get(id(outcome))
        read = (
            consumer(owner, ob.binding, ob.mode)
            if consumer is not None and owner is not None
            else None
        )
        outcome = _kernel_of_consumer(outcome, read, checker)
        owner_part = share_of(owner) if share_of is not None and owner is not None else part
        owner_part.findings.append(
            (
                builder.build(
                    outcome,
                    _companions(outcome, outcomes),
                    owner.int_attrs if owner is not None else None,
                    frozenset(function_modes[ob.binding.function] - {ob.mode}),
                    read,
                ),
                ob.binding.loc.span,
                ob.binding.name,
                ob.rule.mode_independent,
            )
        )
    for key, note in notes.items():
        noted.get(key, part).notes.append(note)


def _kernel_of_consumer(outcome: Outcome, read: Consumer | None, checker: Checker) -> Outcome:
    """Kernel-aware severity from the value's consumer: a grid scalar handed to a launcher of
    the scanned tree is judged by that launcher's block sizes whatever its name; one nothing
    reads sizes no grid."""
    if read is None:
        return outcome
    if read.status == "unread":
        return replace(outcome, kernel=None)
    ob = outcome.obligation
    if (
        outcome.kernel is None
        and read.status == "call"
        and read.callee in checker.launchers
        and type(ob.rule).kernel_grid is not Rule.kernel_grid
    ):
        return replace(outcome, kernel=checker.kernel_of(ob, read.callee))
    return outcome


def _groups(bindings: list[Binding]) -> dict[tuple[int, Role], list[Binding]]:
    """The bindings made together (one call's keywords, one object's fields), by group and
    role: a rule that pairs a value with others of a role takes them from here."""
    groups: dict[tuple[int, Role], list[Binding]] = {}
    for binding in bindings:
        if binding.group is not None:
            groups.setdefault((id(binding.group), binding.role), []).append(binding)
    return groups


def _count(part: FilePart, binding: Binding, code: str, mode: str, outcome: Outcome) -> None:
    """A decided obligation: its site, its verdict among the part's outcomes, its count: every
    obligation is counted under its verdict, so that the verdicts add up to the obligations."""
    part.sites.add(binding.loc.span)
    part.count("obligations")
    part.outcomes.append(
        SiteNote(code, binding.loc.span, binding.function, mode, outcome.verdict, outcome.reason)
    )
    part.count(COUNTED[outcome.verdict])
    ob = outcome.obligation
    if (
        ob.runner.from_profile
        and ob.other is None
        and outcome.verdict in (Verdict.PROVED, Verdict.REFUTED, Verdict.UNKNOWN)
    ):
        part.defaults.add((ob.mode, ob.runner.text))


COUNTED: dict[Verdict, str] = {
    Verdict.PROVED: "proved",
    Verdict.REFUTED: "refuted",
    Verdict.UNKNOWN: "unknown",
    Verdict.UNSUPPORTED: "unsupported",
    Verdict.UNREACHABLE: "unreachable",
}


def _note_outcome(
    part: FilePart,
    ob: Obligation,
    outcome: Outcome,
    notes: dict[tuple[str, int, str], SiteNote],
    config: Config,
) -> None:
    """A note for the sites whose verdict is UNKNOWN or UNSUPPORTED."""
    binding = ob.binding
    if outcome.verdict == Verdict.UNKNOWN:
        reason = outcome.reason or "solver budget exhausted"
        _note(notes, ob.rule.code, binding.loc, binding.function, ob.mode, outcome.verdict, reason)
    elif outcome.verdict == Verdict.UNSUPPORTED:
        _note(
            notes,
            ob.rule.code,
            binding.loc,
            binding.function,
            ob.mode,
            outcome.verdict,
            outcome.reason,
        )
        if config.raise_on_unsupported:
            raise UnsupportedSiteError(f"{binding.loc.span.label()}: {outcome.reason}")


def _unclaimed(
    part: FilePart,
    item: Unclaimed,
    notes: dict[tuple[str, int, str], SiteNote],
    config: Config,
) -> None:
    """A rule that asks nothing: a site all the same, and UNSUPPORTED where the value is not
    modelled."""
    binding, no_claim = item.binding, item.reason
    part.sites.add(binding.loc.span)
    if not no_claim.unsupported:
        return
    part.count("obligations")
    part.count("unsupported")
    part.outcomes.append(
        SiteNote(
            item.rule.code,
            binding.loc.span,
            binding.function,
            item.mode,
            Verdict.UNSUPPORTED,
            no_claim.reason,
        )
    )
    _note(
        notes,
        item.rule.code,
        binding.loc,
        binding.function,
        item.mode,
        Verdict.UNSUPPORTED,
        no_claim.reason,
    )
    if config.raise_on_unsupported:
        raise UnsupportedSiteError(f"{binding.loc.span.label()}: {no_claim.reason}")


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
    """What the obligations of the same class and mode give a replay (each rule's
    `replay_fields`: the index-pointer stride, the grid scalar), so that a replay builds all of
    the metadata the way the code does. The finding's own obligation gives its fields first:
    the stride replayed for a refuted stride is the one refuted, not another layout's of the
    same class and mode."""
    ob = outcome.obligation
    owner = ob.binding.function.split(".")[0]
    found: dict[str, Term] = dict(ob.rule.replay_fields(ob.value, ob.claim))
    for other in outcomes:
        o = other.obligation
        if o.mode != ob.mode or o.binding.function.split(".")[0] != owner:
            continue
        if o.binding.chain[:1] != ob.binding.chain[:1] and found:
            continue
        fields = o.rule.replay_fields(o.value, o.claim)
        if fields and next(iter(fields)) not in found:
            found.update(fields)
    return found


def _who_never_runs(algorithms: AlgorithmModel, names: set[str]) -> Formula | None:
    """What the tree says of a backend registered under `names`: the draft workers that never
    build it, and the algorithms that never run on its device (`AlgorithmModel`)."""
    found = [
        f
        for f in (algorithms.draft_exclusion(names), algorithms.device_exclusion(names))
        if f is not None
    ]
    return conj(*found) if found else None
