"""Classes and dataclasses of the scanned tree by name: the same file first, then a name unique in the tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from idxcheck.source.files import Block, SourceError, SourceFile, reading, strip_comments
from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


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

    def defining_blocks(self, name: str) -> list[tuple[SourceFile, Block]]:
        """The classes named `name`, with their files."""
        return list(self._blocks.get(name, []))

    def signature(self, name: str) -> tuple[tuple[str, str], ...]:
        """What a lookup of `name` depends on: the files that define a class of that name, by
        the digest of their code."""
        return tuple(
            (source.path, source.code_digest()) for source, _ in self._blocks.get(name, [])
        )

    @contextmanager
    def recording(self) -> Iterator[set[str]]:
        """The names looked up inside the `with`: what a file's analysis read of other files
        (`idxcheck.incremental.parts`)."""
        asked: set[str] = set()
        outer, self._asked = self._asked, asked
        try:
            yield asked
        finally:
            # A recording inside another (one block's, inside its file's) adds to it too.
            if outer is not None:
                outer |= asked
            self._asked = outer

    def _choose(self, name: str, near: object) -> tuple[SourceFile, Block] | None:
        candidates = self._blocks.get(name, [])
        local = [c for c in candidates if c[0] is near]
        return local[0] if local else (candidates[0] if len(candidates) == 1 else None)

    def inherited_size(self, source: SourceFile) -> int:
        """Characters of the class blocks in other files that `source`'s classes inherit from
        (transitively, by the names in their base lists, chosen as `lookup` chooses): an
        analysis of `source` parses and interprets them too, so they weigh on its cost
        (`idxcheck.parallel.workers.jobs_for`)."""
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


# ---------------------------------------------------------------------------------------------
# Dataclass field order


def dataclass_fields(cls: ast.ClassDef) -> tuple[str, ...] | None:
    """Field names in declaration order, for a `@dataclass` class; None for other classes.
    Read from CPython's tree: no position is asked of a field, and CPython parses a class
    several times faster than libcst."""
    if "dataclass" not in _decorator_names(cls):
        return None
    names: list[str] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" not in ast.unparse(stmt.annotation):
                names.append(stmt.target.id)
    return tuple(names)


def _decorator_names(cls: ast.ClassDef) -> list[str]:
    names: list[str] = []
    for expr in cls.decorator_list:
        if isinstance(expr, ast.Call):
            expr = expr.func
        if isinstance(expr, ast.Name):
            names.append(expr.id)
        elif isinstance(expr, ast.Attribute):
            names.append(expr.attr)
    return names


class SignatureIndex:
    """Parameters of the scanned tree's top-level functions (Triton kernels, module helpers)
    of which one has a role by its name: same file first, then a name unique in the tree. A
    value handed to such a parameter has its role (`idxcheck.interp.destinations`)."""

    def __init__(self, files: Iterable[SourceFile], role_of: Any, profile_name: str = "") -> None:
        self._found: dict[str, list[tuple[SourceFile, tuple[tuple[str, ...], tuple[str, ...]]]]]
        self._found = {}
        for source in files:
            for name, signature in _role_signatures(source, role_of, profile_name):
                self._found.setdefault(name, []).append((source, signature))

    def resolver(self, source: SourceFile) -> Any:
        def signature(name: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
            candidates = self._found.get(name, [])
            local = [s for f, s in candidates if f is source]
            if local:
                return local[0]
            return candidates[0][1] if len(candidates) == 1 else None

        return signature

    def digest_parts(self) -> list[str]:
        """What the analyses that use the index depend on: each signature and its file."""
        return sorted(
            f"{source.path}\0{name}\0{signature!r}"
            for name, found in self._found.items()
            for source, signature in found
        )


def _role_signatures(
    source: SourceFile, role_of: Any, profile_name: str
) -> tuple[tuple[str, tuple[tuple[str, ...], tuple[str, ...]]], ...]:
    """The file's top-level functions that have a role-named parameter, with their
    parameters: read once per text and kept with the file's other readings (a pre-commit run
    would read every function header of the tree again)."""

    def compute() -> tuple[tuple[str, tuple[tuple[str, ...], tuple[str, ...]]], ...]:
        found = []
        for block in source.blocks:
            if block.kind != "def":
                continue
            signature = role_signature(source.block_text(block, decorators=False), role_of)
            if signature is not None:
                found.append((block.name, signature))
        return tuple(found)

    return reading(source, "role-signatures\0" + profile_name, compute)


def role_signature(text: str, role_of: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The parameters of the `def` at the start of `text` (positional, keyword-only), when one
    of them has a role; None otherwise or when the header cannot be read. Read from the text of
    the header alone: CPython's parser would read the whole body."""
    match = re.search(r"def\s+\w+\s*\(", text)
    if match is None:
        return None
    depth, start = 1, match.end()
    index = start
    while index < len(text) and depth:
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in "'\"#":
            return None  # a string or comment in the header: not read
        index += 1
    if depth:
        return None
    header = strip_comments(text[start : index - 1])
    positional: list[str] = []
    keyword_only: list[str] = []
    target = positional
    level = 0
    current = ""
    parts: list[str] = []
    for char in header:
        if char in "([{":
            level += 1
        elif char in ")]}":
            level -= 1
        if char == "," and level == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    for part in parts:
        name = re.split(r"[:=]", part, maxsplit=1)[0].strip()
        if name in ("", "/"):
            continue
        if name.startswith("*"):
            target = keyword_only
            continue
        if not name.isidentifier():
            return None
        target.append(name)
    if positional and positional[0] in ("self", "cls"):
        return None  # a method: found through its class
    if not any(role_of(name) is not None for name in (*positional, *keyword_only)):
        return None
    return tuple(positional), tuple(keyword_only)
