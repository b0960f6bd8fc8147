"""The pipeline: discover -> prefilter -> parse what can hold a site -> extract bindings per
class -> rules turn them into obligations per forward mode and runner -> solve -> findings.

The engine knows no individual rule: it asks each rule for a claim about each bound value."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from idxcheck.cache import Cache, digest, solver_version
from idxcheck.config import Config
from idxcheck.discover import Candidate, DiscoveryError, discover
from idxcheck.engine_cases import lift_formula
from idxcheck.extract.batch_modes import feeds_batch_modes, modes_not_run
from idxcheck.extract.classes import (
    ClassFacts,
    analyse_class,
    analyse_function,
    dataclass_fields,
    is_mode_enum,
    read_mode_model,
)
from idxcheck.extract.constraints import (
    FileConstraints,
    TreeConstraint,
    TreeConstraints,
    constraints_forced,
    read_constraints,
    read_registry,
    states_mode_constraint,
)
from idxcheck.extract.interpreter import RUNTIME_ATOM, Binding, ScanContext, iter_choice
from idxcheck.extract.layouts import Pairing, buffer_segments_per_request, segments
from idxcheck.extract.modes import ModeModel, mentioned_members, mode_model_from_profile
from idxcheck.extract.runners import WidthDefinitions, read_runner, runner_blocks
from idxcheck.extract.source import (
    Block,
    SourceError,
    SourceFile,
    data_digest,
    decode_source,
    reading,
    strip_comments,
)
from idxcheck.extract.values import BufferV, IntV, LayoutV, NoneV, RuntimeV, UnknownV, Value
from idxcheck.findings import FileError, Finding, Related, ScanResult, SiteNote, Stats
from idxcheck.kernels import (
    BlockRow,
    Launcher,
    block_rows,
    drops_rows,
    find_launchers,
    launchers_signature,
)
from idxcheck.located import Located
from idxcheck.profile import ROLE_BUFFER, ROLE_GRID, ROLE_QO, Profile, load_profile
from idxcheck.readings import FileReadings, store_reading, stored_reading
from idxcheck.rules import REGISTRY, Claim, NoClaim, Rule
from idxcheck.runtime_model import (
    RunnerWidth,
    RuntimeModel,
    default_runtime_model,
    packed_widths,
)
from idxcheck.solve.types import SolveResult
from idxcheck.spans import Loc, Span
from idxcheck.stable import stable_digest
from idxcheck.stored import loads
from idxcheck.suppressions import MARKER as SUPPRESSION_MARKER
from idxcheck.sym.evaluate import (
    Assignment,
    NotConcrete,
    eval_formula,
    eval_term,
    primary_tag,
    selected_tags,
)
from idxcheck.sym.render import render_formula, render_term
from idxcheck.sym.terms import (
    FALSE,
    TRUE,
    And,
    Atom,
    Cmp,
    Const,
    Formula,
    Not,
    Or,
    RuntimeInt,
    RuntimeWidth,
    Term,
    Unknown,
    conj,
    conjuncts,
    const_value,
    disj,
    forget_specialisations,
    formula_atoms,
    formula_mentions_mode,
    formula_symbols,
    neg,
    relative_to,
    simplify,
    simplify_formula,
    specialise_formula,
    specialise_term,
    stable_hash,
    substitute_width,
    substitute_width_formula,
    term_leaves,
    untag_formula,
)
from idxcheck.verdicts import Verdict

MAX_CASES = 64
# Mode-independent rules (shapes, capacities) on paths no forward-mode condition reaches.
ANY_MODE = "any mode"
ANY_RUNNER = RunnerWidth(mode=ANY_MODE, term=RuntimeWidth(), text="", source="any runner")
# A file holding all of these may state configuration constraints (an argument hook that
# rejects a combination for one attention backend): it is read for tree facts even when it
# holds no site.
TREE_FACT_WORDS = (
    (b"raise", b"speculative_eagle_topk", b"attention_backend"),
    (b"register_attention_backend(",),
)
# A file that may put a batch in a mode (`idxcheck.extract.batch_modes`): read only when its
# text does put one in a mode the profile's worker modes look at.
BATCH_MODE_WORDS = (b"forward_mode", b"ForwardMode.")
REPLAY_DEFAULT_BS = 2


class UnsupportedSiteError(Exception):
    """Raised under the test-only `raise_on_unsupported` switch."""


# ---------------------------------------------------------------------------------------------
# Source loading


class HitLines:
    """The line numbers of each read file's prefilter hits (path -> sorted numbers), found
    when first asked for: only the files whose classes are analysed need them."""

    def __init__(self) -> None:
        self._lines: dict[str, list[int]] = {}
        self._pending: dict[str, tuple[SourceFile, Prefilter]] = {}

    def add(self, source: SourceFile, prefilter: Prefilter) -> None:
        self._pending[source.path] = (source, prefilter)

    def __setitem__(self, path: str, lines: list[int]) -> None:
        self._lines[path] = lines

    def blocks_that_may_hit(self, source: SourceFile) -> list[Block]:
        """The blocks of `source` that hold hit lines where those are known, else those whose
        text holds a prefilter word, comments included (a superset): what an analysis of the
        file reads, told without finding its hit lines (0.8 s of one core for the 211 files of
        SGLang 0.5.23, which the workers share when each finds its own)."""
        lines = self._lines.get(source.path)
        if lines is not None:
            return source.blocks_containing(lines)
        pending = self._pending.get(source.path)
        if pending is None:
            return []
        prefilter = pending[1]
        return [b for b in source.blocks if prefilter.matches_text(source.block_text(b))]

    def get(self, path: str, default: list[int]) -> list[int]:
        found = self._lines.get(path)
        if found is None:
            pending = self._pending.pop(path, None)
            if pending is None:
                return default
            source, prefilter = pending
            found = prefilter.code_hit_lines(source.code_text())
            self._lines[path] = found
        return found


@dataclass
class LoadedTree:
    files: list[SourceFile] = field(default_factory=list)
    hits: HitLines = field(default_factory=HitLines)
    # Files the prefilter rejected that hold a suppression marker (display path -> text): the
    # suppression pass needs their comments, and the bytes are in hand only here.
    marked: dict[str, str] = field(default_factory=dict)
    errors: list[FileError] = field(default_factory=list)
    walked: int = 0


def _prefilter_regex(profile: Profile) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(word) for word in profile.prefilter))


class Prefilter:
    """The cheap text test that decides which files are read as Python: a role name, a runner
    word or a tree-fact pattern must occur. It runs on raw bytes first, so most files are never
    decoded."""

    def __init__(self, profile: Profile) -> None:
        self.regex = _prefilter_regex(profile)
        self.profile = profile
        self._role_words: dict[str, bool] = {}
        # Substring tests beat one regex alternation of the same words by 40% on a real tree
        # (CPython's `in` is a fast search; `re` tries each alternative at each position).
        self.words = tuple(profile.prefilter)
        self.raw = tuple(word.encode() for word in self.words)
        self.gates = _gates(self.raw)
        # The words that make a file one the tree facts may read, whatever its role names.
        self.fact_words = TREE_FACT_WORDS + tuple(
            (c.stated_by.encode(),) for c in profile.mode_constraints
        )

    def matches(self, data: bytes) -> bool:
        """Whether one of the words occurs in `data`: the words of a gate are looked for only
        where the gate occurs (nearly every file of a tree holds none)."""
        for gate, words in self.gates:
            if gate in data and (words == (gate,) or any(word in data for word in words)):
                return True
        return False

    def matches_text(self, text: str) -> bool:
        """The same test on the decoded text (the bytes of a file in another encoding than
        UTF-8 can differ); what `regex` finds a first match for."""
        return any(word in text for word in self.words)

    def hit_lines(self, text: str) -> list[int]:
        """The lines whose classes and functions are analysed: those of a runner word or
        tree-fact pattern, and those where a role's words are a role name. The words of a role
        inside a name that is not one (`seqlen.has_cu_seqlens_q` in a kernel) do not make the
        code around them hold a site: every site binds a role name, and every role name holds
        its role's words joined by `_`, which are prefilter words. Comments are left out: a
        word in a comment binds nothing (a 5,000-line kernel class whose parameters' comments
        name `cu_seqlens_q` holds no site)."""
        return self.code_hit_lines(strip_comments(text))  # line breaks stay, so line numbers do

    def code_hit_lines(self, text: str) -> list[int]:
        """`hit_lines` of a text whose comments are already left out."""
        lines: set[int] = set()
        for match in self.regex.finditer(text):
            if self._role_word(match.group()):
                start, end = match.span()
                while start > 0 and text[start - 1] in _NAME_CHARS:
                    start -= 1
                while end < len(text) and text[end] in _NAME_CHARS:
                    end += 1
                if self.profile.role_of(text[start:end]) is None:
                    continue
            lines.add(text.count("\n", 0, match.start()) + 1)
        return sorted(lines)

    def _role_word(self, word: str) -> bool:
        found = self._role_words.get(word)
        if found is None:
            found = self._role_words[word] = self.profile.role_of(word) is not None
        return found


# A gate is at least this long: shorter ones (`max_`) occur in most files of a tree, and each
# file that holds a gate is searched for its words too. On SGLang 0.5.23 (4,719 files, 68 MB),
# 19 words took 0.46 s to search; gates of 5 or more characters (10 gates) 0.29 s, of 4 (6
# gates) 0.38 s, of 6 (12 gates) 0.36 s.
MIN_GATE = 5


def _gates(words: Sequence[bytes]) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
    """The words grouped under substrings they share (a file without a group's substring
    holds none of its words): each time, the substring of at least MIN_GATE bytes that the
    most remaining words hold (then the longest, then the first in byte order)."""
    left = list(dict.fromkeys(words))
    gates: list[tuple[bytes, tuple[bytes, ...]]] = []
    while left:
        holders: dict[bytes, int] = {}
        for word in left:
            parts = {
                word[i:j]
                for i in range(len(word))
                for j in range(i + min(MIN_GATE, len(word)), len(word) + 1)
            }
            for part in parts:
                holders[part] = holders.get(part, 0) + 1
        gate = max(holders, key=lambda part: (holders[part], len(part), part))
        group = tuple(word for word in left if gate in word)
        gates.append((gate, group))
        left = [word for word in left if gate not in word]
    return tuple(gates)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


# `in` on lowered bytes: a case-insensitive regex search of the same bytes costs ten times more.
_MARKER = SUPPRESSION_MARKER.lower().encode()
# The one character outside ASCII that lowers to a letter of the marker (`K`, the Kelvin
# sign, to `k`; `İ` lowers to `i` and a combining dot, which no marker letter follows).
_KELVIN = "\u212a"


def _holds_marker(data: bytes, text: str) -> bool:
    """`SUPPRESSION_MARKER in text.lower()` for `text` decoded from the UTF-8 `data`, from the
    bytes: lowering them is four times cheaper than lowering the text (0.007 s against
    0.028 s for the 211 candidate files of a release, which a pre-commit run reads), and it
    lowers the ASCII letters alike."""
    if _MARKER in data.lower():
        return True
    return _KELVIN in text and SUPPRESSION_MARKER in text.lower()


def load_tree(paths: Sequence[str], config: Config, profile: Profile) -> LoadedTree:
    tree = LoadedTree()
    prefilter = Prefilter(profile)
    for item in discover(paths, config.exclude, config.shown_as):
        if isinstance(item, DiscoveryError):
            tree.errors.append(FileError(item.path, item.message))
            continue
        load_file(item, tree, prefilter)
    return tree


def load_file(
    item: Candidate,
    tree: LoadedTree,
    prefilter: Prefilter,
    known: Mapping[str, Located] | None = None,
) -> None:
    """Read one discovered file into the tree when it passes the prefilter. With `known`
    (what the last scan with the cache found in the files it read as Python, `located`), a
    file whose bytes are the same is taken as found then, and the digest of the bytes of a
    file read as Python is kept on it."""
    tree.walked += 1
    try:
        with open(item.path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        tree.errors.append(FileError(item.display, f"cannot read: {exc.strerror or exc}"))
        return
    found = known.get(item.display) if known is not None else None
    if found is not None:
        data_key = data_digest(data)
        if data_key == found.digest:
            try:
                text, encoding = decode_source(data)
            except SourceError:
                pass  # it decoded before: read it as any other file, which reports the error
            else:
                source = found.source(item.display, text, encoding)
                tree.files.append(source)
                tree.hits.add(source, prefilter)
                return
    facts_only = any(all(word in data for word in words) for words in prefilter.fact_words)
    matched = facts_only or prefilter.matches(data)
    batches = not matched and all(word in data for word in BATCH_MODE_WORDS)
    if matched or batches:
        try:
            text_file = SourceFile.from_bytes(item.display, data)
        except SourceError as exc:
            if matched:
                tree.errors.append(FileError(item.display, str(exc)))
        else:
            # The hit lines themselves are found when the file's classes are analysed. The
            # words are ASCII: in UTF-8 they occur in the text where they occur in the bytes.
            utf8 = text_file.encoding in ("utf-8", "utf-8-sig")
            if (
                facts_only
                or (matched and (utf8 or prefilter.matches_text(text_file.text)))
                or (batches and feeds_batch_modes(text_file, prefilter.profile))
            ):
                if utf8:
                    text_file.holds_marker = _holds_marker(data, text_file.text)
                if known is not None:
                    text_file.data_digest = data_digest(data)
                tree.files.append(text_file)
                tree.hits.add(text_file, prefilter)
                return
    if _MARKER in data.lower():
        tree.marked[item.display] = data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Tree-wide facts


def header_base_names(source: SourceFile, block: Block) -> set[str]:
    """The words in a class header's base list (`class A(mod.B, C):` -> mod, B, C): a text
    reading, before any parse, that over-approximates the base names."""
    header = source.header_text(block)
    base_list = header.split("(", 1)[1] if "(" in header else ""
    return set(re.findall(r"\w+", base_list))


class ClassIndex:
    """Classes of the scanned tree by name: the same file first, then a name unique in the tree."""

    def __init__(self, files: Iterable[SourceFile]) -> None:
        self._blocks: dict[str, list[tuple[SourceFile, Block]]] = {}
        for source in files:
            for block in source.blocks:
                if block.kind == "class":
                    self._blocks.setdefault(block.name, []).append((source, block))
        self._asked: set[str] | None = None  # see `recording`

    def defining(self, name: str) -> list[SourceFile]:
        """The files that define a class named `name`."""
        return [source for source, _ in self._blocks.get(name, [])]

    def signature(self, name: str) -> tuple[tuple[str, str], ...]:
        """What a lookup of `name` depends on: the files that define a class of that name, by
        the digest of their code."""
        return tuple(
            (source.path, source.code_digest()) for source, _ in self._blocks.get(name, [])
        )

    @contextmanager
    def recording(self) -> Iterator[set[str]]:
        """The names looked up inside the `with`: what a file's analysis read of other files
        (`idxcheck.parts`)."""
        asked: set[str] = set()
        self._asked = asked
        try:
            yield asked
        finally:
            self._asked = None

    def _choose(self, name: str, near: object) -> tuple[SourceFile, Block] | None:
        candidates = self._blocks.get(name, [])
        local = [c for c in candidates if c[0] is near]
        return local[0] if local else (candidates[0] if len(candidates) == 1 else None)

    def inherited_size(self, source: SourceFile) -> int:
        """Characters of the class blocks in other files that `source`'s classes inherit from
        (transitively, by the names in their base lists, chosen as `lookup` chooses): an
        analysis of `source` parses and interprets them too, so they weigh on its cost
        (`idxcheck.workers.jobs_for`)."""
        return sum(
            len(owner.block_text(block))
            for owner, block in self.inherited_blocks(source, source.blocks)
            if owner is not source
        )

    def inherited_blocks(
        self, source: SourceFile, blocks: Iterable[Block]
    ) -> list[tuple[SourceFile, Block]]:
        """The class blocks that the classes among `blocks` (of `source`) inherit from,
        transitively, in this file or others, chosen as `lookup` chooses."""
        seen: set[tuple[int, Block]] = set()
        found: list[tuple[SourceFile, Block]] = []
        pending = [(source, b) for b in blocks if b.kind == "class"]
        while pending:
            owner, block = pending.pop()
            for name in sorted(header_base_names(owner, block)):
                chosen = self._choose(name, owner)
                if chosen is None or (id(chosen[0]), chosen[1]) in seen:
                    continue
                seen.add((id(chosen[0]), chosen[1]))
                pending.append(chosen)
                found.append(chosen)
        return found

    def lookup(self, name: str, near: object) -> object:
        if self._asked is not None:
            self._asked.add(name)
        chosen = self._choose(name, near)
        if chosen is None:
            return None
        chosen[0].keep_parse(chosen[1])
        try:
            return chosen[0].class_source(chosen[1])
        except SourceError:
            return None


class DataclassIndex:
    """Field order of `@dataclass` classes: same file first, then a name unique in the tree."""

    def __init__(self, files: Iterable[SourceFile]) -> None:
        self._blocks: dict[str, list[tuple[SourceFile, Block]]] = {}
        for source in files:
            for block in source.blocks:
                if block.kind == "class" and self.is_dataclass_header(source, block):
                    self._blocks.setdefault(block.name, []).append((source, block))
        self._fields: dict[tuple[str, str], tuple[str, ...] | None] = {}

    @staticmethod
    def is_dataclass_header(source: SourceFile, block: Block) -> bool:
        header = source.header_text(block)
        return "dataclass" in header and "dataclass" in strip_comments(header)

    def names(self) -> set[str]:
        return set(self._blocks)

    def is_dataclass_block(self, source: SourceFile, block: Block) -> bool:
        return any(s is source and b == block for s, b in self._blocks.get(block.name, []))

    def _chosen(self, source: SourceFile, name: str) -> tuple[SourceFile, Block] | None:
        candidates = self._blocks.get(name, [])
        local = [c for c in candidates if c[0] is source]
        return local[0] if local else (candidates[0] if len(candidates) == 1 else None)

    def file_resolver(self, source: SourceFile) -> Any:
        """The path of the file that declares a dataclass, as `resolver` chooses it."""

        def path(name: str) -> str | None:
            chosen = self._chosen(source, name)
            return chosen[0].path if chosen is not None else None

        return path

    def resolver(self, source: SourceFile) -> Any:
        def fields(name: str) -> tuple[str, ...] | None:
            chosen = self._chosen(source, name)
            if chosen is None:
                return None
            key = (chosen[0].path, name)
            if key not in self._fields:
                try:
                    self._fields[key] = dataclass_fields(chosen[0].cpython_class(chosen[1])[0])
                except SourceError:
                    self._fields[key] = None
            return self._fields[key]

        return fields


def find_mode_model(tree: LoadedTree, profile: Profile) -> tuple[ModeModel, list[FileError]]:
    errors: list[FileError] = []
    fallback = mode_model_from_profile(profile, mentioned_in(tree.files, profile))
    for source in tree.files:
        if "class ForwardMode" not in source.text:
            continue
        for block in source.blocks_named("ForwardMode"):
            try:
                cls = source.class_source(block)
            except SourceError as exc:
                errors.append(FileError(source.path, str(exc)))
                continue
            if not is_mode_enum(cls):
                continue
            ctx = ScanContext(profile, fallback, lambda _n: None, dict(profile.phase_widths))
            model, problems = read_mode_model(cls, ctx)
            errors.extend(FileError(source.path, p) for p in problems)
            if model.members:
                return model, errors
    return fallback, errors


# ---------------------------------------------------------------------------------------------
# Obligations


@dataclass(frozen=True)
class Obligation:
    rule: Rule
    binding: Binding
    value: Value
    mode: str
    runner: RunnerWidth
    claim: Claim
    assumptions: Formula
    constraints: tuple[TreeConstraint, ...] = ()
    other: Binding | None = None  # for pairwise rules: the binding compared with


@dataclass
class Outcome:
    obligation: Obligation
    verdict: Verdict
    reason: str = ""
    model: dict[str, int] = field(default_factory=dict)
    atoms: dict[str, bool] = field(default_factory=dict)
    needs: dict[str, int] = field(default_factory=dict)
    width_value: int | None = None
    # Kernel-aware severity: the launcher, and the block-size row that drops rows (or None,
    # with the rows it would bite under, when the mismatch is latent).
    kernel: KernelVerdict | None = None


def _leaves_of_formula(formula: Formula) -> list[Term]:
    out: list[Term] = []
    if isinstance(formula, Cmp):
        out.extend(term_leaves(formula.left))
        out.extend(term_leaves(formula.right))
    elif isinstance(formula, (And, Or)):
        for arg in formula.args:
            out.extend(_leaves_of_formula(arg))
    elif isinstance(formula, Not):
        out.extend(_leaves_of_formula(formula.arg))
    return out


@dataclass(frozen=True)
class KernelVerdict:
    launcher: Launcher
    row: BlockRow | None  # the row whose BLOCK_M drops rows, with `model` its counterexample
    model: dict[str, int]
    latent_rows: tuple[BlockRow, ...]  # rows under which no configuration drops rows
    head_dim: int | None
    biting: tuple[int, ...] = ()  # when latent: BLOCK_M values of the table that would drop rows


# A runtime value read as it is (`spec_info.accept_length_cpu`), not a comparison of one.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*")


class Checker:
    """Turns bindings into obligations and decides them, with a cache of verdicts."""

    def __init__(
        self, profile: Profile, config: Config, modes: ModeModel, runtime: RuntimeModel
    ) -> None:
        self.profile = profile
        self.config = config
        self.modes = modes
        self.runtime = runtime
        self.rules: list[Rule] = [cls() for cls in REGISTRY if config.rule_enabled(cls.code)]
        self._solver: Any = None
        # Verdicts by normalised formulas; checks and reachability queries apart, since a check
        # of (P, True) and the reachability of P have the same formulas.
        self._checked: dict[tuple[Formula, Formula], SolveResult] = {}
        self._reached: dict[Formula, bool | None] = {}
        self._mode_cache: dict[int, tuple[Formula, list[tuple[str, Formula]] | None]] = {}
        self.class_constraints: list[TreeConstraint] = []
        # Constraints of a mode the tree states (`TreeConstraints.per_mode`).
        self.mode_constraints: dict[str, list[TreeConstraint]] = {}
        self.launchers: dict[str, Launcher] = {}
        self.disk: Cache | None = None

    def kernel_severity(self, outcome: Outcome) -> KernelVerdict | None:
        """For a refuted grid obligation whose scalar reaches a launcher of the scanned tree:
        does some real BLOCK_M of its table drop rows in the domain?"""
        ob = outcome.obligation
        target = self.profile.kernel_grids.get(ob.binding.name)
        if target is None or outcome.verdict != Verdict.REFUTED:
            return None
        launcher = self.launchers.get(target[0])
        if launcher is None or ob.binding.loc.span.path not in launcher.callers:
            return None
        scalar = simplify(
            substitute_width(specialise_term(ob.claim.subject, ob.mode), ob.runner.term)
        )
        width = ob.runner.term
        best: tuple[tuple[int, list[int]], BlockRow, dict[str, int], int] | None = None
        latent: list[BlockRow] = []
        order = self.profile.symbol_order()
        arches = list(dict.fromkeys(r.arch for r in block_rows(self.profile, target[0])))
        kernel_constraints = [
            c.formula
            for c in self.profile.domain
            if formula_symbols(c.formula) <= {"head_dim", "sm", "block_m"}
        ]
        for row in block_rows(self.profile, target[0]):
            dims = [
                d
                for d in row.head_dims(self.profile.head_dims)
                if all(
                    eval_formula(
                        c, Assignment(ints={"head_dim": d, "sm": row.sm, "block_m": row.block_m})
                    )
                    for c in kernel_constraints
                )
            ]
            if not dims:
                continue
            result = self._check(ob.assumptions, drops_rows(scalar, width, row.block_m))
            if result.verdict != Verdict.REFUTED:
                latent.append(row)
                continue
            # The first arch of the table (the one the runtime companion replays on) first,
            # then the smallest counterexample.
            rank = (
                arches.index(row.arch),
                [result.model.get(name, 0) for name in order if name in result.model],
            )
            if best is None or rank < best[0]:
                best = (rank, row, dict(result.model), max(dims))
        if best is None:
            # Latent here: name the block sizes of the table under which it would bite.
            biting = sorted(
                {
                    r.block_m
                    for r in block_rows(self.profile, target[0])
                    if self._check(ob.assumptions, drops_rows(scalar, width, r.block_m)).verdict
                    == Verdict.REFUTED
                }
            )
            return KernelVerdict(launcher, None, {}, tuple(latent), None, tuple(biting))
        return KernelVerdict(launcher, best[1], best[2], tuple(latent), best[3])

    def forget_translations(self) -> None:
        """The solver's translations of this file's formulas dropped (`solve.solver._Translator`)."""
        if self._solver is not None:
            self._solver.forget_translations()

    @property
    def solver(self) -> Any:
        if self._solver is None:
            # z3 is imported only once an obligation needs it.
            from idxcheck.solve.solver import Solver

            self._solver = Solver(
                [c.formula for c in self.profile.domain],
                self.profile.symbol_order(),
                self.config.rlimit,
            )
        return self._solver

    def obligations(
        self, binding: Binding, partners: Sequence[Binding] = ()
    ) -> Iterable[Obligation | tuple[Binding, Rule, str, NoClaim]]:
        for rule in self.rules:
            if binding.role not in rule.roles:
                continue
            for pc, value in iter_choice(binding.value, binding.pc):
                per_mode = self._per_mode(pc)
                if per_mode is None:
                    if not rule.mode_independent:
                        continue  # no forward mode reaches this value: its runtime width is unknown
                    per_mode = [(ANY_MODE, pc)]
                for mode, pc_mode in per_mode:
                    runners = (
                        self.runtime.for_mode(mode, most=rule.bounds_requests)
                        if mode != ANY_MODE
                        else (ANY_RUNNER,)
                    )
                    if not runners and rule.mode_independent:
                        runners = (ANY_RUNNER,)
                    for pair_pc, pair in self._pairings(partners, mode, pc_mode):
                        for runner in runners:
                            if runner.selector is not None and runner.selector not in formula_atoms(
                                pc_mode
                            ):
                                continue
                            claim = rule.claim(
                                _specialise_value(value, mode), runner.term, pair, binding
                            )
                            if isinstance(claim, NoClaim):
                                yield (binding, rule, mode, claim)
                                continue
                            # The path may test the width the runtime publishes (`if
                            # spec_info.num_tokens_per_req > 1`): it is this runner's.
                            path = substitute_width_formula(conj(pc_mode, pair_pc), runner.term)
                            stated = (*self.class_constraints, *self._stated_for(mode, runner))
                            assumptions = conj(
                                path,
                                runner.cond,
                                claim.assumptions,
                                *(c.formula for c in stated),
                                *self._runtime_facts(path, mode),
                            )
                            yield Obligation(
                                rule,
                                binding,
                                value,
                                mode,
                                runner,
                                claim,
                                assumptions,
                                stated,
                            )

    def _pairings(
        self, partners: Sequence[Binding], mode: str, pc_mode: Formula
    ) -> list[tuple[Formula, Pairing | None]]:
        """The index pointers built together with a grid scalar, in one mode."""
        found: list[tuple[Formula, Pairing | None]] = []
        for partner in partners:
            for pc, value in iter_choice(partner.value, partner.pc):
                specialised = specialise_formula(pc, mode)
                if specialised == FALSE:
                    continue
                value = _specialise_value(value, mode)
                if isinstance(value, LayoutV):
                    shape = segments(value)
                    if shape.per_request is None:
                        pairing = Pairing(Unknown(shape.problem), False, value.text)
                    elif const_value(shape.per_request) == 1:
                        pairing = Pairing(value.stride, True, value.text)
                    else:
                        pairing = Pairing(value.stride, False, value.text)
                elif isinstance(value, RuntimeV):
                    pairing = Pairing(
                        Unknown(f"the segments of `{partner.name}` are runtime lengths"),
                        False,
                        partner.name,
                    )
                elif isinstance(value, UnknownV):
                    pairing = Pairing(Unknown(value.reason), False, partner.name)
                elif isinstance(value, NoneV):
                    # No index pointer handed over: the kernel takes one row per entry.
                    pairing = Pairing(Const(1), False, f"{partner.name}=None", none=True)
                elif not isinstance(value, BufferV):
                    pairing = Pairing(
                        Unknown(f"`{partner.name}` is not an index vector idxcheck models"),
                        False,
                        partner.name,
                    )
                elif isinstance(value, BufferV):
                    # A buffer filled elsewhere: its length still says how many segments it
                    # has. One per request: the grid must cover a request (the runtime width).
                    per_request = buffer_segments_per_request(value)
                    if per_request is not None and const_value(per_request) == 1:
                        pairing = None
                    else:
                        pairing = Pairing(
                            Unknown(
                                f"the segments of the buffer `{partner.name}` are filled elsewhere"
                            ),
                            False,
                            partner.name,
                        )
                else:
                    pairing = None
                found.append((relative_to(specialised, pc_mode), pairing))
        return found or [(TRUE, None)]

    def pairwise_obligations(self, bindings: Sequence[Binding]) -> Iterable[Obligation]:
        """Capture against replay (and against eager) of one target in one mode."""
        for rule in self.rules:
            if not rule.pairwise:
                continue
            by_name: dict[str, list[Binding]] = {}
            for binding in bindings:
                if binding.role in rule.roles and binding.kind != "argument":
                    by_name.setdefault(binding.name, []).append(binding)
            for group in by_name.values():
                phased: dict[str, dict[str, list[tuple[Binding, Formula, Value]]]] = {}
                for binding in group:
                    for pc, value in iter_choice(binding.value, binding.pc):
                        for mode, pc_mode in self._per_mode(pc) or []:
                            phase = self._phase(binding, pc_mode)
                            if phase is not None:
                                phased.setdefault(mode, {}).setdefault(phase, []).append(
                                    (binding, pc_mode, value)
                                )
                for mode, phases in phased.items():
                    runners = self.runtime.for_mode(mode) or (ANY_RUNNER,)
                    runner = runners[0]
                    for later in ("replay", "eager"):
                        for capture, pc_c, value_c in phases.get("capture", []):
                            for binding, pc_b, value_b in phases.get(later, []):
                                if binding is capture:
                                    continue
                                if later == "eager" and not (
                                    isinstance(value_b, LayoutV) and isinstance(value_c, LayoutV)
                                ):
                                    continue
                                claim = rule.compare(
                                    _specialise_value(value_c, mode),
                                    _specialise_value(value_b, mode),
                                    runner.term,
                                    "capture",
                                    packed=mode in self.profile.packed_modes,
                                )
                                if isinstance(claim, NoClaim):
                                    continue
                                path = substitute_width_formula(
                                    conj(self._without_flag(pc_b), self._without_flag(pc_c)),
                                    runner.term,
                                )
                                path = conj(path, *self._runtime_facts(path, mode))
                                stated = self._stated_for(mode, runner)
                                yield Obligation(
                                    rule,
                                    binding,
                                    value_b,
                                    mode,
                                    runner,
                                    claim,
                                    conj(path, runner.cond, *(c.formula for c in stated)),
                                    stated,
                                    capture,
                                )

    def _stated_for(self, mode: str, runner: RunnerWidth) -> tuple[TreeConstraint, ...]:
        """The tree's constraints of `mode` that hold against `runner`: those that ask for a
        runner that also captures in another mode hold only against a runner of the tree
        that does."""
        return tuple(
            c
            for c in self.mode_constraints.get(mode, ())
            if not c.runners_also_in
            or (
                runner.runner
                and any(w.runner == runner.runner for w in self.runtime.for_mode(c.runners_also_in))
            )
        )

    def _runtime_facts(self, formula: Formula, mode: str) -> list[Formula]:
        """The conditions on runtime values in `formula` that the profile knows to be true in
        `mode` (`Profile.runtime_facts`): a path that needs one false does not run there. Only
        the truth of the value itself (`if spec_info.x:`) is known, not a comparison of it."""
        attrs = [a for a, (modes, _) in self.profile.runtime_facts.items() if mode in modes]
        if not attrs:
            return []
        return [
            Atom(key, text)
            for key, text in formula_atoms(formula).items()
            if key == RUNTIME_ATOM + text
            and _DOTTED.fullmatch(text)
            and any(text == attr or text.endswith("." + attr) for attr in attrs)
        ]

    def _phase(self, binding: Binding, pc: Formula) -> str | None:
        entry = binding.chain[0].rsplit(".", 1)[-1] if binding.chain else ""
        if entry in self.profile.capture_entries:
            return "capture"
        if entry in self.profile.replay_entries:
            return "replay"
        if entry in self.profile.eager_entries:
            return "eager"
        flag = self.profile.capture_flag
        for part in conjuncts(pc):
            if isinstance(part, Atom) and part.key == flag:
                return "capture"
            if isinstance(part, Not) and isinstance(part.arg, Atom) and part.arg.key == flag:
                return "replay"
        return None

    def _without_flag(self, pc: Formula) -> Formula:
        flag = self.profile.capture_flag
        return conj(
            *(
                part
                for part in conjuncts(pc)
                if not (isinstance(part, Atom) and part.key == flag)
                and not (
                    isinstance(part, Not) and isinstance(part.arg, Atom) and part.arg.key == flag
                )
            )
        )

    def _per_mode(self, pc: Formula) -> list[tuple[str, Formula]] | None:
        """The modes in which a path condition may hold, each with the condition left."""
        key = id(pc)
        found = self._mode_cache.get(key)
        if found is not None and found[0] is pc:
            return found[1]
        result: list[tuple[str, Formula]] | None = None
        if formula_mentions_mode(pc):
            result = []
            for mode in self.modes.members:
                if mode in self.runtime.not_run:
                    continue  # no code puts a batch in it
                specialised = specialise_formula(pc, mode)
                if specialised != FALSE:
                    result.append((mode, specialised))
        self._mode_cache[key] = (pc, result)
        return result

    def decide(self, obligation: Obligation) -> Outcome:
        holds = simplify_formula(specialise_formula(obligation.claim.holds, obligation.mode))
        cases = lift_formula(holds)
        if cases is None:
            cases = [(TRUE, holds)]
        regular: list[Formula] = []
        unsupported: list[tuple[Formula, str]] = []
        for guard, case in cases:
            leaves = _leaves_of_formula(case)
            unknown = [leaf for leaf in leaves if isinstance(leaf, Unknown)]
            if any(isinstance(leaf, RuntimeInt) for leaf in leaves):
                continue  # computed from the runtime layout: consistent by construction
            if unknown:
                assert isinstance(unknown[0], Unknown)
                unsupported.append((guard, unknown[0].reason))
            else:
                regular.append(conj(guard, neg(case)))
        verdict = Verdict.PROVED
        outcome = Outcome(obligation, verdict)
        if regular:
            violation = disj(*regular)
            result = self._check(obligation.assumptions, violation)
            outcome = Outcome(
                obligation,
                result.verdict,
                result.reason,
                dict(result.model),
                dict(result.atoms),
                dict(result.needs),
            )
        for guard, reason in unsupported:
            if outcome.verdict >= Verdict.UNSUPPORTED:
                break
            reachable = self._reachable(conj(obligation.assumptions, guard))
            if reachable is None:
                outcome = Outcome(obligation, Verdict.UNKNOWN, "z3 could not decide reachability")
            elif reachable:
                outcome = Outcome(obligation, Verdict.UNSUPPORTED, reason)
        if not regular and not unsupported and outcome.verdict == Verdict.PROVED:
            outcome.reason = "read from the runtime"
        return outcome

    def _check(self, assumptions: Formula, violation: Formula) -> SolveResult:
        key = (untag_formula(assumptions), untag_formula(violation))
        found = self._checked.get(key)
        if found is None:
            disk_key = self._disk_key("check", assumptions, violation)
            stored = self.disk.get_verdict(disk_key) if self.disk is not None else None
            if stored is not None:
                from idxcheck.solve.result import result_from_dict

                found = result_from_dict(stored)  # None: not a stored result, a miss
            if found is None:
                found = self.solver.check(assumptions, violation)
                if self.disk is not None:
                    from idxcheck.solve.result import result_to_dict

                    self.disk.put_verdict(disk_key, result_to_dict(found))
            self._checked[key] = found
        return found

    def _reachable(self, formula: Formula) -> bool | None:
        key = untag_formula(formula)
        if key in self._reached:
            return self._reached[key]
        found: bool | None
        disk_key = self._disk_key("reachable", formula, TRUE)
        stored = self.disk.get_verdict(disk_key) if self.disk is not None else None
        known = False
        if stored is not None:
            from idxcheck.solve.result import reachable_from_dict

            known, found = reachable_from_dict(stored)
        if not known:
            found = self.solver.satisfiable(formula)
            if self.disk is not None:
                self.disk.put_verdict(disk_key, {"reachable": found})
        self._reached[key] = found
        return found

    def _disk_key(self, kind: str, first: Formula, second: Formula) -> str:
        if self.disk is None:
            return ""
        return self.disk.verdict_key(
            kind,
            str(self.config.rlimit),
            "\n".join(c.text for c in self.profile.domain),
            stable_hash(first),
            stable_hash(second),
        )


def _specialise_value(value: Value, mode: str) -> Value:
    if isinstance(value, LayoutV):
        return LayoutV(
            specialise_term(value.start, mode),
            specialise_term(value.stride, mode),
            specialise_term(value.entries, mode) if value.entries is not None else None,
            value.loc,
            value.text,
            value.source,
        )
    from idxcheck.extract.values import IntV

    if isinstance(value, IntV):
        return IntV(specialise_term(value.term, mode))
    return value


# ---------------------------------------------------------------------------------------------
# Findings


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


class FindingBuilder:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def names(self) -> dict[str, str]:
        return dict(self.profile.display)

    def build(self, outcome: Outcome, companions: dict[str, Term]) -> Finding:
        ob = outcome.obligation
        width_env = Assignment(ints=outcome.model, mode=ob.mode, atoms=_atom_values(outcome.atoms))
        try:
            width_value = eval_term(ob.runner.term, width_env)
        except NotConcrete:
            width_value = None
        env = Assignment(ints=outcome.model, mode=ob.mode, width=width_value, atoms=width_env.atoms)
        subject = specialise_term(ob.claim.subject, ob.mode)
        chosen = primary_tag(selected_tags(subject, env))
        fallback = ob.value.loc if isinstance(ob.value, LayoutV) else ob.binding.loc
        primary = chosen[0] if chosen else fallback
        if chosen:
            site_text = chosen[1]
        elif isinstance(ob.value, LayoutV):
            site_text = ob.value.text
        elif isinstance(ob.value, RuntimeV):
            site_text = ""  # no term of its own: laid out from what the runtime passes in
        else:
            site_text = render_term(subject)
        names = self.names()
        width_text = render_term(ob.runner.term, names)
        target_text = (
            render_term(specialise_term(ob.claim.target, ob.mode), names)
            if ob.claim.target is not None
            else width_text
        )
        message = ob.rule.format_message(
            what=ob.claim.what,
            site=site_text,
            width=target_text,
            mode=ob.mode,
            name=ob.binding.name,
        )
        related: list[Related] = []
        if ob.binding.loc.span.line != primary.span.line:
            related.append(
                Related("binding", f"bound to `{ob.binding.name}` here", ob.binding.loc.span)
            )
        if ob.binding.declared_by is not None and ob.binding.declared_by[1] != primary.span.path:
            # A dataclass of another file: an edit there alone can rename what the call binds.
            cls_name, path = ob.binding.declared_by
            related.append(
                Related(
                    "dataclass",
                    f"`{ob.binding.name}` is the field of `{cls_name}` ({path}) at this "
                    "argument's position",
                    path=path,
                )
            )
        if isinstance(ob.value, LayoutV) and ob.value.loc.span.line not in (
            primary.span.line,
            ob.binding.loc.span.line,
        ):
            related.append(
                Related(
                    "layout",
                    f"index pointer built here: `{_clip(ob.value.text)}`",
                    ob.value.loc.span,
                )
            )
        if ob.other is not None:
            related.append(
                Related("capture", f"`{ob.other.name}` built at capture here", ob.other.loc.span)
            )
        if ob.runner is ANY_RUNNER or ob.other is not None:
            pass
        elif ob.runner.from_profile:
            related.append(
                Related(
                    "profile",
                    f"runtime width `{width_text}` from the {self.profile.name} profile default ({ob.runner.source}); no runner for {ob.mode} in the scanned files",
                )
            )
        elif ob.runner.capacity:
            related.append(
                Related(
                    "runner",
                    f"{ob.runner.runner or 'runner'} holds up to `{ob.runner.capacity}` tokens per request in {ob.mode}; each request has at most `{ob.runner.text}` ({ob.runner.source})",
                    ob.runner.span,
                )
            )
        else:
            related.append(
                Related(
                    "runner",
                    f"{ob.runner.runner or 'runner'} lays out `{ob.runner.text}` tokens per request in {ob.mode}",
                    ob.runner.span,
                )
            )
        if len(ob.binding.chain) > 1:
            related.append(Related("entry", "reached from " + " -> ".join(ob.binding.chain)))
        own_symbols = formula_symbols(conj(ob.assumptions, ob.claim.holds))
        counterexample = {
            name: value
            for name, value in outcome.model.items()
            if name in own_symbols or name not in self.profile.context_symbols
        }
        cex_text = " ".join(f"{names.get(k, k)}={v}" for k, v in counterexample.items())
        needs_text = ", ".join(
            f"{names.get(k, k)} > {v - 1}" for k, v in outcome.needs.items() if k != "bs"
        )
        atoms_text = formula_atoms(conj(ob.assumptions, ob.claim.holds))
        conditions = tuple(
            (atoms_text[key], value) for key, value in outcome.atoms.items() if key in atoms_text
        )
        violation = render_formula(
            neg(specialise_formula(untag_formula(ob.claim.holds), ob.mode)), names
        )
        explain = (
            f"site: `{site_text}` bound to `{ob.binding.name}` in {ob.binding.function} ({ob.binding.kind})",
            *(f"tree constraint: {c.text} ({c.span.path}:{c.span.line})" for c in ob.constraints),
            f"path condition in {ob.mode}: {render_formula(specialise_formula(ob.binding.pc, ob.mode), names)}",
            f"runtime width: {width_text} ({ob.runner.source})",
            f"fails whenever: {violation}",
            *(
                f"domain: {c.text} ({c.why})"
                for c in self.profile.domain
                if c.text.startswith("implies(")
                and formula_symbols(c.formula) & set(outcome.needs)
                and formula_symbols(c.formula) <= set(outcome.model)
            ),
        )
        fingerprint = _fingerprint(
            ob.rule.code,
            ob.binding.function,
            ob.mode,
            render_formula(specialise_formula(untag_formula(ob.claim.holds), ob.mode)),
        )
        replay = {
            "mode": ob.mode,
            # A rule whose counterexample does not fix the batch replays two requests, the
            # smallest batch where one request can read another's rows.
            "bs": outcome.model.get("bs", REPLAY_DEFAULT_BS),
            "capture_bs": outcome.model.get("bs", REPLAY_DEFAULT_BS),
            "tokens_per_req": width_value,
            "qo_stride": _evaluate(companions.get("qo_stride"), env),
            "max_len": _evaluate(companions.get("max_len"), env),
            "segments_per_req": _evaluate(companions.get("segments_per_req"), env),
            "block_m": None,
            "head_dim": None,
        }
        severity = ob.rule.severity
        kernel = outcome.kernel
        if kernel is not None:
            rows = ", ".join(sorted({str(r.block_m) for r in kernel.latent_rows}, key=int))
            if kernel.row is not None:
                row = kernel.row
                latent_text = ", ".join(
                    f"{r.block_m} ({r.arch}, head dim {r.head_lo}-{r.head_hi})"
                    for r in kernel.latent_rows
                )
                counterexample = {
                    k: v for k, v in kernel.model.items() if k in counterexample or k in own_symbols
                }
                counterexample["head_dim"] = kernel.head_dim or 0
                counterexample["block_m"] = row.block_m
                cex_text = (
                    " ".join(f"{names.get(k, k)}={v}" for k, v in counterexample.items())
                    + f" arch={row.arch}"
                )
                message += f"; with BLOCK_M {row.block_m} ({row.arch}, head dim {kernel.head_dim}) rows are dropped"
                replay["block_m"] = row.block_m
                replay["head_dim"] = kernel.head_dim
                for key in ("bs", "capture_bs"):
                    replay[key] = kernel.model.get("bs", replay[key])
                try:
                    env2 = Assignment(ints=kernel.model, mode=ob.mode, atoms=width_env.atoms)
                    tokens = eval_term(ob.runner.term, env2)
                    replay["tokens_per_req"] = tokens
                    at_block = Assignment(ints=kernel.model, mode=ob.mode, width=tokens)
                    replay["max_len"] = _evaluate(companions.get("max_len"), at_block)
                    replay["qo_stride"] = _evaluate(companions.get("qo_stride"), at_block)
                    replay["segments_per_req"] = _evaluate(
                        companions.get("segments_per_req"), at_block
                    )
                except NotConcrete:
                    pass
                if latent_text:
                    explain = (
                        *explain,
                        f"latent under BLOCK_M {latent_text}: no configuration drops rows there",
                    )
            else:
                severity = "warning"
                message += f"; latent: no block size of `{kernel.launcher.name}` (BLOCK_M {rows}) drops rows in the domain"
                if kernel.biting:
                    message += f"; it bites with BLOCK_M {', '.join(map(str, kernel.biting))}"
            related.append(
                Related(
                    "kernel",
                    f"`{kernel.launcher.name}` launches grid cdiv({kernel.launcher.param}, BLOCK_M)",
                    kernel.launcher.span,
                )
            )
        elif ob.rule.code == "IDX002" and ob.binding.name in self.profile.kernel_grids:
            explain = (
                *explain,
                f"the launcher `{self.profile.kernel_grids[ob.binding.name][0]}` is not in the scanned tree: plain rule",
            )
        return Finding(
            code=ob.rule.code,
            name=ob.rule.name,
            severity=severity,
            span=primary.span,
            function=ob.binding.function,
            mode=ob.mode,
            message=message,
            verdict=Verdict.REFUTED,
            counterexample=counterexample,
            counterexample_text=cex_text,
            needs_text=needs_text,
            conditions=conditions,
            related=tuple(related),
            fingerprint=fingerprint,
            explain=explain,
            replay=replay,
        )


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _atom_values(atoms: dict[str, bool]) -> dict[str, bool]:
    return dict(atoms)


def _evaluate(term: Term | None, env: Assignment) -> int | None:
    if term is None:
        return None
    try:
        return eval_term(specialise_term(term, env.mode or ""), env)
    except NotConcrete:
        return None


# ---------------------------------------------------------------------------------------------
# Scanning


def _path_key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def focus_files(tree: LoadedTree, focus: Sequence[str], profile: Profile) -> frozenset[str] | None:
    """The files whose classes a focused scan analyses: the focus files; the files of classes
    that inherit (by name, transitively) from a class defined in one, since their methods'
    sites are located there; the files that build a dataclass or call a kernel launcher
    defined in one, since its field order or grid decides their verdicts. None (analyse every
    file) when a focus file feeds the tree facts (`feeds_tree_facts`): then any backend's
    verdict may change."""
    keys = {_path_key(path) for path in focus}
    changed = [s for s in tree.files if _path_key(s.path) in keys]
    registry = set(read_registry(tree.files))
    if any(feeds_tree_facts(s, profile, registry) for s in changed):
        return None
    chosen = {s.path for s in changed}
    used = set(DataclassIndex(changed).names()) | set(find_launchers(changed, profile))
    for name in used:
        pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
        # The substring test first: the regex alone costs half a second on a real tree.
        chosen.update(s.path for s in tree.files if name in s.text and pattern.search(s.text))
    names = {b.name for s in changed for b in s.blocks if b.kind == "class"}
    headers: list[tuple[str, str, set[str]]] = []  # (file, class, names in its base list)
    for source in tree.files:
        for block in source.blocks:
            if block.kind == "class":
                headers.append((source.path, block.name, header_base_names(source, block)))
    grew = True
    while grew:
        grew = False
        for path, name, base_names in headers:
            if name not in names and base_names & names:
                names.add(name)
                chosen.add(path)
                grew = True
    return frozenset(chosen)


def scan(paths: Sequence[str], config: Config | None = None) -> ScanResult:
    config = config or Config()
    started = time.perf_counter()
    profile = load_profile(
        config.profile, {"domain": list(config.domain), "widths": dict(config.widths)}
    )
    tree = load_tree(paths, config, profile)
    result = scan_tree(tree, config, profile)
    result.stats.seconds = round(time.perf_counter() - started, 3)
    return result


def scan_source(text: str, path: str = "<string>", config: Config | None = None) -> ScanResult:
    """Scan one in-memory file (tests, VALID/INVALID cases)."""
    config = config or Config()
    profile = load_profile(
        config.profile, {"domain": list(config.domain), "widths": dict(config.widths)}
    )
    tree = LoadedTree(walked=1)
    source = SourceFile(path, text)
    lines = Prefilter(profile).hit_lines(text)
    if lines:
        tree.files.append(source)
        tree.hits[path] = lines
    return scan_tree(tree, config, profile)


def tree_key(tree: LoadedTree, config: Config, profile: Profile, cache: Cache) -> str:
    """What a scan result depends on: every file read after the prefilter, the walk's errors,
    the configuration and the versions."""
    parts = [cache.versions(), config.key_settings(), profile.name]
    parts.append(str(tree.walked))
    parts.extend(
        f"{e.path}\0{e.message}" for e in sorted(tree.errors, key=lambda e: (e.path, e.message))
    )
    parts.extend(f"{s.path}\0{s.text_digest()}" for s in sorted(tree.files, key=lambda s: s.path))
    return digest(*parts)


def scan_tree(tree: LoadedTree, config: Config, profile: Profile) -> ScanResult:
    if config.cache_dir is None:
        return _scan_tree(tree, config, profile, None)
    cache = Cache(Path(config.cache_dir), solver_version())
    try:
        key = tree_key(tree, config, profile, cache)
        stored = cache.get_result(key)
        if stored is not None:
            # None: written by another layout of these classes (or not by idxcheck): scan again
            found: ScanResult | None = loads(stored, ScanResult)
            if found is not None:
                return found
        result = _scan_tree(tree, config, profile, cache)
        # Pickled: a plain-data form of a whole release's result took 25 ms to build and
        # write as JSON, the pickle 4 ms (the stored outcomes of `stamps` are pickled too).
        cache.put_result(key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        cache.prune()
        return result
    finally:
        cache.close()


FactBundle = tuple[ModeModel, RuntimeModel, TreeConstraints, list[FileError]]


def cached_tree_facts(
    tree: LoadedTree,
    config: Config,
    profile: Profile,
    cache: Cache | None,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    key: str | None,
    inputs: str | None = None,
) -> tuple[FactBundle, str]:
    """The forward modes, the runners' widths and the backends' constraints of the tree, with
    the errors met reading them, and their `stable_digest`; from the cache under `key`
    (the first of `tree_keys`) when no file they depend on changed, which spares a pre-commit run most
    of its parsing. Otherwise read again, the mode model, each runner file's widths and each
    file's argument checks from the cache while their files and what every reading of their
    kind depends on (`inputs` of `tree_keys`, the mode model, the registry) are unchanged."""
    if cache is not None and key is not None:
        stored = cache.get_blob(key)
        if stored is not None:
            cached: tuple[FactBundle, str] | None = loads(stored, tuple[FactBundle, str])
            if cached is not None:
                return cached  # else written by another layout of these classes: read again
    found = ScanResult()
    modes, mode_errors = _cached_mode_model(tree, profile, cache, inputs)
    found.errors.extend(mode_errors)
    runners = None
    if cache is not None and inputs is not None:
        try:
            runners = FileReadings(
                cache, "runner-file", digest(inputs, stable_digest(modes)), RunnerReading
            )
        except TypeError:
            pass  # a mode model the digest cannot render: read every runner
    # The runners' reading changes the widths per mode only: the phase widths the argument
    # checks are read with are the profile's, so that they can be read while the runners are.
    phase_widths = dict(default_runtime_model(profile).phase_widths)
    checks = None
    if cache is not None and inputs is not None:
        try:
            names = sorted(read_registry(tree.files))
            checks = FileReadings(
                cache,
                "constraints-file",
                digest(inputs, stable_digest(modes), stable_digest(phase_widths), *names),
                FileConstraints,
            )
        except TypeError:
            pass  # something the digest cannot render: read every file's checks
    from idxcheck.workers import in_background

    def elsewhere(
        compute: Callable[[], list[FileConstraints]],
    ) -> Callable[[], list[FileConstraints]]:
        return in_background(compute, config.jobs, cache)

    constraints = read_constraints(
        tree.files, ScanContext(profile, modes, lambda _n: None, phase_widths), checks, elsewhere
    )
    runtime = runtime_model_from_tree(tree, profile, modes, dataclasses, width_defs, found, runners)
    assert runtime.phase_widths == phase_widths
    bundle = (modes, runtime, constraints(), found.errors)
    if cache is None or key is None:
        return bundle, ""  # nothing is cached: no key needs the value
    try:
        value = stable_digest(bundle)
    except TypeError:
        # An object the digest cannot render (a test fails on it, `tests/test_stable.py`):
        # key the analyses by the text the facts came from, as strict as before.
        value = f"text {key}"
    cache.put_blob(key, pickle.dumps((bundle, value), protocol=pickle.HIGHEST_PROTOCOL))
    return bundle, value


def _cached_mode_model(
    tree: LoadedTree, profile: Profile, cache: Cache | None, inputs: str | None
) -> tuple[ModeModel, list[FileError]]:
    """`find_mode_model`, from the cache while the files that may hold the enum and `inputs`
    (which hold the profile's fallback members) are unchanged."""
    if cache is None or inputs is None:
        return find_mode_model(tree, profile)
    holders = [f"{s.path}\0{s.text_digest()}" for s in tree.files if "class ForwardMode" in s.text]
    key = digest("mode-model", inputs, *holders)
    shape = tuple[ModeModel, list[FileError]]
    stored: tuple[ModeModel, list[FileError]] | None = stored_reading(cache, key, shape)
    if stored is None:
        stored = find_mode_model(tree, profile)
        store_reading(cache, key, stored)
    return stored


def tree_keys(tree: LoadedTree, config: Config, profile: Profile, cache: Cache) -> tuple[str, str]:
    """Two keys from one pass over the tree (each file's dataclasses are read once):

    - what the tree facts depend on. A file that holds the mode enum, a runner, a width
      function, a backend registry or a backend constraint counts by its whole text; any other
      file only by its dataclasses (whose fields a runner may read), so that editing a
      backend's methods keeps the key. The members of the profile's fallback mode model depend
      on what every file mentions, so they count too;
    - what a file's analysis, and a runner's reading, read of the tree besides their own file,
      the classes they look up and the tree facts (`context_key`, `FileReadings`): the
      dataclasses of every file (metadata objects built by field order), the whole text of
      files that define a width function (interpreted where called, `WidthDefinitions`), the
      fallback mode members, the versions and settings."""
    names = set(read_registry(tree.files))
    width_functions = profile.tree_width_functions
    fallback = mode_model_from_profile(profile, mentioned_in(tree.files, profile))
    common = [
        cache.versions(),
        replace(config, focus=None).key_settings(),
        profile.name,
        repr(fallback.members),
    ]
    facts = ["tree-facts", *common]
    inputs = ["inputs", *common]
    for source in sorted(tree.files, key=lambda s: s.path):
        feeds = feeds_tree_facts(source, profile, names)
        defines = reading(
            source,
            "defines\0" + "\0".join(width_functions),
            partial(_defines, source, width_functions),
        )
        whole = f"{source.path}\0{source.text_digest()}" if feeds or defines else None
        blocks = None
        if not (feeds and defines):
            found = [
                source.block_text(b)
                for b in source.blocks
                if b.kind == "class" and DataclassIndex.is_dataclass_header(source, b)
            ]
            blocks = f"{source.path}\0{digest(*found)}" if found else None
        for parts, by_text in ((facts, feeds), (inputs, defines)):
            part = whole if by_text else blocks
            if part is not None:
                parts.append(part)
    return digest(*facts), digest(*inputs)


def context_key(inputs: str, facts_value: str, launchers: dict[str, Launcher]) -> str:
    """What every file's analysis depends on beyond the file and the classes it looks up
    (`TreeFacts.context_key`): the inputs of `tree_keys`, the kernel launchers, and the tree
    facts by their value (`stable_digest`), not by the text they were read from, so that an
    edit of a file the facts are read from leaves the other files' cached analyses valid while
    the facts stay the same."""
    return digest("context", inputs, facts_value, launchers_signature(launchers))


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
    if reading(source, "feeds\0" + profile.name, partial(_feeds_by_text, source, profile)):
        return True
    # Whether the file quotes a registered backend's name depends on the tree's registry.
    return _raises_speculative(source) and _quotes_any(source.text, registry_names)


def _raises_speculative(source: SourceFile) -> bool:
    """Whether the file can hold an argument check (`read_constraints`)."""
    return reading(
        source,
        "raises-speculative",
        lambda: "raise" in source.text and "speculative" in source.text,
    )


def _feeds_by_text(source: SourceFile, profile: Profile) -> bool:
    """`feeds_tree_facts` but for the backend names the file may quote."""
    text = source.text
    return (
        "class ForwardMode" in text
        or "register_attention_backend(" in text
        or (_raises_speculative(source) and constraints_forced(text) is not None)
        or states_mode_constraint(text, profile)
        or feeds_batch_modes(source, profile)
        or any(f"def {name}" in text for name in profile.tree_width_functions)
        or bool(runner_blocks(source, profile.runner_width_attrs))
    )


def _defines(source: SourceFile, functions: Iterable[str]) -> bool:
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


def _scan_tree(
    tree: LoadedTree, config: Config, profile: Profile, cache: Cache | None
) -> ScanResult:
    result = ScanResult(mode_order=profile.mode_members)
    result.errors.extend(tree.errors)
    result.stats.files = tree.walked
    dataclasses = DataclassIndex(tree.files)
    width_defs = WidthDefinitions(tree.files, profile.tree_width_functions)
    facts_key, inputs = (
        tree_keys(tree, config, profile, cache) if cache is not None else (None, None)
    )
    (modes, runtime, constraints, fact_errors), facts_value = cached_tree_facts(
        tree, config, profile, cache, dataclasses, width_defs, facts_key, inputs
    )
    result.errors.extend(fact_errors)
    result.mode_model_source = modes.source
    launchers = find_launchers(tree.files, profile)
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
        None if inputs is None else context_key(inputs, facts_value, launchers),
    )
    focused = focus_files(tree, config.focus, profile) if config.focus is not None else None
    sources = [s for s in tree.files if focused is None or s.path in focused]
    forget_specialisations()
    if cache is not None:
        cache.close()  # a connection must not cross a fork; it reopens on next use
    from idxcheck.workers import analyse_parts

    # The facts are read: their trees are dropped (`analyse_parts` keeps those its workers
    # share), so that workers start lean and parse what they use.
    merge_parts(analyse_parts(sources, facts, cache, tree.files), result)
    result.findings.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.mode))
    result.notes.sort(key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode))
    result.outcomes.sort(
        key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode, n.verdict)
    )
    result.errors.sort(key=lambda e: (e.path, e.message))
    return result


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

    def checker(self, cache: Cache | None) -> Checker:
        checker = Checker(self.profile, self.config, self.modes, self.runtime)
        checker.launchers = self.launchers
        checker.disk = cache
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


PART_COUNTS = ("obligations", "proved", "refuted", "unknown", "unsupported", "unreachable")


def merge_parts(parts: Iterable[FilePart], result: ScanResult) -> None:
    stats = result.stats
    notes: dict[tuple[str, Span, str], SiteNote] = {}
    by_key: dict[tuple[str, str, Span], Finding] = {}
    sites: set[Span] = set()
    for part in parts:
        stats.parsed += part.parsed
        sites |= part.sites
        for name in PART_COUNTS:
            setattr(stats, name, getattr(stats, name) + getattr(part.stats, name))
        result.errors.extend(part.errors)
        result.outcomes.extend(part.outcomes)
        for note in part.notes:
            notes.setdefault((note.code, note.span, note.mode), note)
        for finding, use, name, mode_independent in part.findings:
            key = (finding.code, "" if mode_independent else finding.mode, finding.span)
            first = by_key.get(key)
            if first is None:
                by_key[key] = finding
                continue
            # One finding per place to fix; the other places that use the same value are
            # related.
            if (
                all(r.span is None or r.span.line != use.line for r in first.related)
                and use.line != first.span.line
            ):
                by_key[key] = replace(
                    first,
                    related=(
                        *first.related,
                        Related("binding", f"also used as `{name}` here", use),
                    ),
                )
    stats.sites = len(sites)
    result.findings.extend(by_key.values())
    result.notes.extend(notes.values())


RunnerReading = tuple[list[RunnerWidth], list[FileError]]


def runtime_model_from_tree(
    tree: LoadedTree,
    profile: Profile,
    modes: ModeModel,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    result: ScanResult,
    runners: FileReadings | None = None,
) -> RuntimeModel:
    """Runner widths read from the scanned tree for the modes it has runners of; the profile's
    defaults for the other modes."""
    default = default_runtime_model(profile)
    read: dict[str, list[RunnerWidth]] = {}
    for source in tree.files:
        blocks = runner_blocks(source, profile.runner_width_attrs)
        if not blocks:
            continue
        reading: RunnerReading | None = runners.get(source) if runners is not None else None
        if reading is None:
            reading = _read_runners(
                source, blocks, profile, modes, dataclasses, width_defs, default.phase_widths
            )
            if runners is not None:
                runners.put(source, reading)
        widths, errors = reading
        result.errors.extend(errors)
        for width in widths:
            if width.mode in modes.members:
                read.setdefault(width.mode, []).append(width)
    widths_by_mode = dict(default.widths)
    for mode, found in read.items():
        widths_by_mode[mode] = tuple(found)
    most = {
        mode: packed_widths(packed, widths_by_mode.get(mode, ()))
        for mode, packed in profile.packed_modes.items()
    }
    not_run = modes_not_run(tree.files, profile, modes.members)
    return RuntimeModel(widths_by_mode, default.phase_widths, most=most, not_run=not_run)


def _read_runners(
    source: SourceFile,
    blocks: list[Block],
    profile: Profile,
    modes: ModeModel,
    dataclasses: DataclassIndex,
    width_defs: Mapping[str, Any],
    phase_widths: Mapping[str, Term],
) -> RunnerReading:
    """The widths of one file's runner classes, with the errors met reading them."""
    ctx = ScanContext(
        profile,
        modes,
        dataclasses.resolver(source),
        dict(phase_widths),
        frozenset(b.name for b in source.blocks if b.kind == "def"),
        width_defs,
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
            if binding.group is not None and binding.role == ROLE_QO:
                groups.setdefault(id(binding.group), []).append(binding)
        accesses = [
            Binding(
                role=ROLE_BUFFER,
                name=access.buffer,
                value=IntV(access.end),
                pc=access.pc,
                loc=access.loc,
                function=access.function,
                chain=access.chain,
                kind="access",
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
            if binding.kind == "argument":
                # An index pointer passed by position to a function whose parameters are not
                # known: it pairs with the grid scalars of the call, but its name alone does not
                # say that it is per-request query layout.
                continue
            partners = (
                groups.get(id(binding.group), [])
                if binding.role == ROLE_GRID and binding.group is not None
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
