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

The key needs the file's code and hit lines, which cost a pass of the tokenizer over the file;
a file whose text did not change at all is found through a second key, of its whole text,
that names the first (`_text_key`): a whole-tree scan after an edit computes neither for the
files it did not edit."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.incremental.cache import Cache
from idxcheck.incremental.parse_store import parses_from
from idxcheck.incremental.stored import hex_digest, loads
from idxcheck.model.stable import digest
from idxcheck.source.files import SourceFile

if TYPE_CHECKING:
    from idxcheck.check.checker import Checker

# (what was looked up: "class" or "def", its name, the files it led to by code digest)
Lookups = tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]


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


def analyse_file(source: SourceFile, facts: TreeFacts, checker: Checker) -> FilePart:
    """`check.analyse.analyse_file`, loaded on first use: a scan whose parts all come from the
    cache loads neither the interpreter nor the checker."""
    from idxcheck.check.analyse import analyse_file as analyse

    return analyse(source, facts, checker)


def analysed_part(source: SourceFile, facts: TreeFacts, checker: Checker) -> FilePart:
    """The file analysed, and stored in the checker's disk cache with the classes it looked
    up (for a file `stored_part` did not answer)."""
    # The workers hand the checker the disk cache itself as its verdict store.
    cache = checker.disk if isinstance(checker.disk, Cache) else None
    key = part_key(source, facts) if cache is not None else None
    if cache is None or key is None:
        return analyse_file(source, facts, checker)
    with (
        facts.classes.recording() as classes,
        _recording_functions(facts) as functions,
        parses_from(cache),
    ):
        part = analyse_file(source, facts, checker)
    asked = [*(("class", n) for n in sorted(classes)), *(("def", n) for n in sorted(functions))]
    known_code_digests(asked, facts, cache, keep=True)
    recorded: Lookups = tuple((kind, name, _signature(kind, name, facts)) for kind, name in asked)
    cache.put_part(key, pickle.dumps((recorded, part), protocol=pickle.HIGHEST_PROTOCOL))
    cache.put_part(_text_key(source, facts), key.encode())
    return part
