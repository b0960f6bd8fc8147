"""Each file's analysis, cached: a scan after an edit analyses the edited files again, not the
tree.

A file's `FilePart` (its sites, verdict counts, notes and findings) depends on

- the file's code: `SourceFile.code_digest`, which leaves comments out (the analysis reads no
  comment: method bodies are searched and quoted without them), so that a comment edit keeps
  the stored part;
- the lines the prefilter hit in it (they choose the classes that are analysed);
- the tree facts (modes, runners' widths, backends' constraints, dataclasses), the kernel
  launchers, the configuration and the tool's and solver's versions: `TreeFacts.context_key`;
- the classes of other files it looked up (base classes) and the functions of other files it
  followed (`source.modules.FunctionIndex`): recorded while the file is analysed, by the names
  asked for, and checked on every later use against the files that each name now leads to,
  so that an edit of a helper's file analyses its callers again.

A stored part whose recorded lookups no longer hold is analysed again and replaced.

Where the file's part misses, each analysed block's share of it may still be found
(`_block_key`): a method edit in one class of a file leaves its other classes' shares valid.
A block's share depends on the block's code and place, the hit lines in it, the file's text
outside its classes (imports, constants, functions: `_module_digest`), the context key, and
the classes and functions its analysis looked up (a class of the same file by its block,
`_block_signature`). Its checks depend on the other blocks' only through the places and the
owners (classes, functions) their outcomes share: a note is made once per place, a finding
lists the modes and the companions of its owner's outcomes. So a share is stored only where
it shares none of them with another block's, and has no finding (the readers analysis of a
finding reads the other blocks' text); it is used only where it still shares none with the
blocks analysed beside it, else the file is analysed whole.

The key needs the file's code and hit lines, which cost a pass of the tokenizer over the file;
a file whose text did not change at all is found through a second key, of its whole text,
that names the first (`_text_key`): a whole-tree scan after an edit computes neither for the
files it did not edit."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.incremental.cache import Cache
from idxcheck.incremental.parse_store import parses_from
from idxcheck.incremental.stored import hex_digest, loads
from idxcheck.model.spans import Span
from idxcheck.model.stable import digest
from idxcheck.source.files import Block, SourceFile
from idxcheck.source.lines import split_lines

if TYPE_CHECKING:
    from idxcheck.check.analyse import AnalysedFile
    from idxcheck.check.checker import Checker

# (what was looked up: "class" or "def", its name, the files it led to by code digest)
Lookups = tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]
# What a block's share touches that another block's checks could share: the places of its
# sites, outcomes, notes and findings, and the owners of its outcomes (the class or function
# before the first dot of `Class.method`).
Footprint = tuple[tuple[Span, ...], tuple[str, ...]]
# A block's share as stored: its lookups (by `_block_signature`), its footprint, the share.
StoredShare = tuple[Lookups, Footprint, FilePart]


@contextmanager
def _recording_functions(facts: TreeFacts) -> Iterator[set[str]]:
    if facts.functions is None:
        yield set()
        return
    with facts.functions.recording() as asked:
        yield asked


def part_key(source: SourceFile, facts: TreeFacts) -> str | None:
    if facts.context_key is None:
        return None
    hits = ",".join(map(str, facts.hits.get(source.path, [])))
    return digest("part", facts.context_key, source.path, source.code_digest(), hits)


def _text_key(source: SourceFile, facts: TreeFacts) -> str:
    """The key of the file's whole text, under which its `part_key` is stored: the same text
    has the same code and the same hit lines."""
    return digest("part-text", str(facts.context_key), source.path, source.text_digest())


def _signature(kind: str, name: str, facts: TreeFacts) -> tuple[tuple[str, str], ...]:
    if kind == "def":
        return facts.functions.signature(name) if facts.functions is not None else ()
    return facts.classes.signature(name)


def _files(kind: str, name: str, facts: TreeFacts) -> Iterable[SourceFile]:
    if kind == "def":
        return facts.functions.files_of(name) if facts.functions is not None else ()
    return facts.classes.defining(name)


def known_code_digests(
    lookups: Iterable[tuple[str, str]], facts: TreeFacts, cache: Cache, keep: bool = False
) -> None:
    """The code digests of the files that the lookups (kind, name) lead to, from the cache
    where a scan computed them for the same text before, else computed and stored. Comparing
    a stored part's lookups with the tree (`ClassIndex.signature`) strips the comments of
    every file they name, which costs far more than looking up their text's digests
    (bench/RESULTS.md, "What each change did", and "Measurements that stood in code
    comments"). `keep`: also store the digests this process computed already (a looked-up
    file analysed in the same scan took its own), for the scans that check the lookups."""
    for kind, name in lookups:
        for source in _files(kind, name, facts):
            computed = source.has_code_digest()
            if computed and not keep:
                continue
            key = digest("code-digest", cache.versions(), source.text_digest())
            if computed:
                if cache.get_part(key) is None:
                    cache.put_part(key, source.code_digest().encode())
                continue
            stored = hex_digest(cache.get_part(key))
            if stored is not None:
                source.remember_code_digest(stored)
            else:
                cache.put_part(key, source.code_digest().encode())


def stored_part(source: SourceFile, facts: TreeFacts, cache: Cache | None) -> FilePart | None:
    """The file's part from the cache when it and everything it read are unchanged."""
    if cache is None or facts.context_key is None:
        return None
    text_key = _text_key(source, facts)
    named = hex_digest(cache.get_part(text_key))
    key = named if named is not None else part_key(source, facts)
    if key is None:
        return None
    stored = cache.get_part(key)
    if stored is None:
        return None
    if named is None:
        cache.put_part(text_key, key.encode())  # the next scan of this text skips `part_key`
    loaded: tuple[Lookups, FilePart] | None = loads(stored, tuple[Lookups, FilePart])
    if loaded is None:
        return None  # written by another layout of these classes (or not at all): analyse again
    lookups, part = loaded
    known_code_digests(((kind, name) for kind, name, _ in lookups), facts, cache)
    if not all(_signature(kind, name, facts) == found for kind, name, found in lookups):
        return None
    return part


def analyse_file(
    source: SourceFile,
    facts: TreeFacts,
    checker: Checker,
    reused: Mapping[Block, FilePart] | None = None,
    record: bool = False,
) -> AnalysedFile:
    """`check.analyse.analyse_blocks`, loaded on first use: a scan whose parts all come from
    the cache loads neither the interpreter nor the checker."""
    from idxcheck.check.analyse import analyse_blocks

    return analyse_blocks(source, facts, checker, reused, record)


def analysed_part(source: SourceFile, facts: TreeFacts, checker: Checker) -> FilePart:
    """The file analysed, and stored in the checker's disk cache with the classes it looked
    up (for a file `stored_part` did not answer); its blocks' shares stored beside it, and
    those stored before used where they still hold."""
    # The workers hand the checker the disk cache itself as its verdict store.
    cache = checker.disk if isinstance(checker.disk, Cache) else None
    key = part_key(source, facts) if cache is not None else None
    if cache is None or key is None:
        return analyse_file(source, facts, checker).part
    lines = split_lines(source.code_text())
    module = _module_digest(source, lines)
    keys = {
        block: _block_key(source, block, facts, lines, module)
        for block in source.blocks_containing(facts.hits.get(source.path, []))
    }
    stored = _stored_shares(keys, source, facts, cache, lines, module)
    with (
        facts.classes.recording() as classes,
        _recording_functions(facts) as functions,
        parses_from(cache),
    ):
        result = analyse_file(
            source, facts, checker, {b: share for b, (_, _, share) in stored.items()}, True
        )
        footprints = _footprints(result, stored)
        if stored and not all(_apart(block, footprints) for block in stored):
            stored = {}
            result = analyse_file(source, facts, checker, record=True)
            footprints = _footprints(result, stored)
    for lookups, _, _ in stored.values():
        for kind, name, _ in lookups:
            (classes if kind == "class" else functions).add(name)
    asked = [*(("class", n) for n in sorted(classes)), *(("def", n) for n in sorted(functions))]
    known_code_digests(asked, facts, cache, keep=True)
    recorded: Lookups = tuple((kind, name, _signature(kind, name, facts)) for kind, name in asked)
    part = result.part
    cache.put_part(key, pickle.dumps((recorded, part), protocol=pickle.HIGHEST_PROTOCOL))
    cache.put_part(_text_key(source, facts), key.encode())
    if not result.cut_short:
        _store_shares(result, keys, footprints, source, facts, cache, lines, module)
    return part


def _module_digest(source: SourceFile, lines: list[str]) -> str:
    """The file's code outside its classes (their lines left blank, so that the lines after
    keep their numbers): the imports, constants and functions any block's analysis may read.
    `lines`: the lines of the file's code (`SourceFile.code_text`)."""
    outside = list(lines)
    for block in source.blocks:
        if block.kind == "class":
            end = min(block.end_line, len(outside))
            outside[block.start_line - 1 : end] = ["\n"] * (end - block.start_line + 1)
    return digest("module", "".join(outside))


def _block_code(block: Block, lines: list[str]) -> str:
    """A block's code and place."""
    return digest(
        block.kind,
        block.name,
        str(block.start_line),
        str(block.header_line),
        str(block.end_line),
        "".join(lines[block.start_line - 1 : block.end_line]),
    )


def _block_key(
    source: SourceFile, block: Block, facts: TreeFacts, lines: list[str], module: str
) -> str:
    hits = [n for n in facts.hits.get(source.path, []) if block.start_line <= n <= block.end_line]
    return digest(
        "block-part",
        str(facts.context_key),
        source.path,
        _block_code(block, lines),
        ",".join(map(str, hits)),
        module,
    )


def _block_signature(
    kind: str, name: str, facts: TreeFacts, source: SourceFile, lines: list[str], module: str
) -> tuple[tuple[str, str], ...]:
    """`_signature`, with the block's own file counted by what a block of it reads: a class
    of the file by its block, a function of it by the code outside the classes."""
    if kind == "class":
        return tuple(
            (s.path, _block_code(b, lines) if s is source else s.code_digest())
            for s, b in facts.classes.defining_blocks(name)
        )
    own = source.code_digest()
    return tuple(
        (path, f"module:{module}" if path == source.path and found == own else found)
        for path, found in _signature(kind, name, facts)
    )


def _stored_shares(
    keys: dict[Block, str],
    source: SourceFile,
    facts: TreeFacts,
    cache: Cache,
    lines: list[str],
    module: str,
) -> dict[Block, StoredShare]:
    """The blocks' shares stored by an earlier analysis, where everything they read holds."""
    found: dict[Block, StoredShare] = {}
    for block, key in keys.items():
        data = cache.get_part(key)
        loaded: StoredShare | None = (
            loads(data, tuple[Lookups, Footprint, FilePart]) if data is not None else None
        )
        if loaded is None:
            continue
        lookups = loaded[0]
        known_code_digests(((kind, name) for kind, name, _ in lookups), facts, cache)
        if all(
            _block_signature(kind, name, facts, source, lines, module) == signature
            for kind, name, signature in lookups
        ):
            found[block] = loaded
    return found


def _footprints(result: AnalysedFile, stored: dict[Block, StoredShare]) -> dict[Block, Footprint]:
    found: dict[Block, Footprint] = {}
    for share in result.shares:
        if share.reused:
            found[share.block] = stored[share.block][1]
            continue
        part = share.part
        spans = {
            *part.sites,
            *(n.span for n in part.outcomes),
            *(n.span for n in part.notes),
            *(use for _, use, _, _ in part.findings),
        }
        owners = {n.function.split(".")[0] for n in (*part.outcomes, *part.notes)}
        found[share.block] = (tuple(spans), tuple(sorted(owners)))
    return found


def _apart(block: Block, footprints: dict[Block, Footprint]) -> bool:
    """Whether the block's share touches no place and no owner that another block's does."""
    spans, owners = map(set, footprints[block])
    return not any(
        spans.intersection(other[0]) or owners.intersection(other[1])
        for b, other in footprints.items()
        if b != block
    )


def _store_shares(
    result: AnalysedFile,
    keys: dict[Block, str],
    footprints: dict[Block, Footprint],
    source: SourceFile,
    facts: TreeFacts,
    cache: Cache,
    lines: list[str],
    module: str,
) -> None:
    """The shares this analysis made that a later one may use: those with no finding that
    touch nothing another block's touches."""
    for share in result.shares:
        if share.reused or share.part.findings or not _apart(share.block, footprints):
            continue
        asked = [
            *(("class", n) for n in sorted(share.classes)),
            *(("def", n) for n in sorted(share.functions)),
        ]
        lookups: Lookups = tuple(
            (kind, name, _block_signature(kind, name, facts, source, lines, module))
            for kind, name in asked
        )
        value: StoredShare = (lookups, footprints[share.block], share.part)
        cache.put_part(keys[share.block], pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
