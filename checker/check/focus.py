"""The files a focused scan analyses (a pre-commit run, `--changed-only`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from idxcheck.facts.constraints import read_registry
from idxcheck.facts.kernels import find_launchers
from idxcheck.facts.tree import feeds_tree_facts
from idxcheck.profiles.schema import Profile
from idxcheck.source.index import DataclassIndex, header_base_names
from idxcheck.source.tree import LoadedTree


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
    registry = set(read_registry(tree.files, profile))
    if any(feeds_tree_facts(s, profile, registry) for s in changed):
        return None
    chosen = {s.path for s in changed}
    used = set(DataclassIndex(changed).names()) | set(find_launchers(changed, profile))
    for name in used:
        pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
        # The substring test first: the regex alone is slow over a whole tree
        # (bench/RESULTS.md, "What each change did").
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
