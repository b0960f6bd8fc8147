"""Module-level functions of the scanned tree by module path, and the names each file imports:
how `f(...)`, `mod.f(...)` or `pkg.mod.f(...)` in one file resolves to a `def` in the same file
or in another file of the tree. Read from the files' text and blocks alone: nothing is
imported."""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from idxcheck.source.files import (
    Block,
    FunctionSource,
    SourceError,
    SourceFile,
    cpython_check,
    reading,
)

# `from a import b`, `import a.b as m` at the start of a line (the module's own imports; those
# under an `if` or a `try` are conditional and not read).
_IMPORT_LINE = re.compile(r"^(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+\w)")

# How many re-exports (`from .impl import f` in a package's `__init__.py`) are followed.
MAX_REEXPORTS = 4


@dataclass(frozen=True)
class Imported:
    """What a name a file imports stands for: `name` of `module` (`from module import name`),
    or the module itself (`name` None: `import module as m`). A relative module keeps its
    leading dots."""

    module: str
    name: str | None


def file_imports(source: SourceFile) -> dict[str, Imported]:
    """The names the file's top-level import statements bind, by local name (the last
    binding of a name wins, as at run time)."""
    found = reading(source, "imports", lambda: _read_imports(source.lines))
    return {local: Imported(module, name or None) for local, module, name in found}


def _read_imports(lines: list[str]) -> tuple[tuple[str, str, str], ...]:
    found: dict[str, tuple[str, str, str]] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not _IMPORT_LINE.match(line):
            continue
        statement = line
        # A parenthesised name list or a backslash continues the statement.
        while index < len(lines) and (
            ("(" in statement and ")" not in statement) or statement.rstrip().endswith("\\")
        ):
            statement += lines[index]
            index += 1
        try:
            tree = ast.parse(statement)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name != "*":
                        local = alias.asname or alias.name
                        found[local] = (local, module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname is not None:
                        found[alias.asname] = (alias.asname, alias.name, "")
                    else:  # `import a.b` binds `a`
                        first = alias.name.split(".")[0]
                        found[first] = (first, first, "")
    return tuple(found.values())


# Integer literals only: the value of a constant is at most this many digits long, and a shift
# at most this many bits.
_MAX_CONSTANT_DIGITS = 40
_MAX_SHIFT = 128


def module_constants(source: SourceFile) -> dict[str, int]:
    """The file's module-level integer constants that nothing else in the file binds: an
    upper-case name assigned once, by a module-level statement, an integer literal, a shift or
    a product of literals (`MAX_QUERY_LEN = 8192`, `_LIMIT = 1 << 31`), and bound nowhere else
    in the file, at any depth (no other assignment target, loop or `with` target, parameter,
    `def`, `class`, import, `global`, `except ... as` or pattern capture; no star import).
    Read from CPython's tree of the text, never run; a file CPython cannot parse has none.
    The statement starts its line (`_CANDIDATE_LINE`)."""
    found = reading(source, "constants", lambda: _read_constants(source.text))
    return dict(found)


# An assignment to an upper-case name at the start of a line: a module-level statement that may
# make a constant. The names of these lines are asked first, so that a file is parsed (and its
# bindings counted) only when a name read there may be one of its constants: most names an
# analysis looks up are functions, classes and modules.
_CANDIDATE_LINE = re.compile(r"^([A-Z_][A-Z0-9_]*)\s*(?::[^=\n]*)?=", re.MULTILINE)


def module_constant(source: SourceFile, name: str) -> int | None:
    """`module_constants(source)[name]`, reading the file's constants only where `name` starts
    a line that assigns it."""
    if name not in _constant_lines(source):
        return None
    return module_constants(source).get(name)


def _constant_lines(source: SourceFile) -> frozenset[str]:
    return reading(
        source, "constant-lines", lambda: frozenset(_CANDIDATE_LINE.findall(source.text))
    )


# The readings `module_constant` makes: of the text alone (no profile's words in them).
CONSTANT_READINGS = ("constant-lines", "constants")


def read_constants_ahead(source: SourceFile) -> None:
    """Make the readings `module_constant` asks for (CONSTANT_READINGS) before their use: a
    pre-commit run's helper reads them of the focused files while it waits for the files to
    analyse, once for every worker it then forks (`idxcheck.parallel.workers`)."""
    _constant_lines(source)
    module_constants(source)


def _read_constants(text: str) -> tuple[tuple[str, int], ...]:
    if not _CANDIDATE_LINE.search(text):
        return ()  # no candidate: spares the parse
    try:
        tree = cpython_check(text)
    except SourceError:
        return ()
    if isinstance(tree, SyntaxError):
        return ()
    candidates: dict[str, ast.expr] = {}
    for stmt in tree.body:
        target: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if (
            isinstance(target, ast.Name)
            and stmt.col_offset == 0  # not after a `;`
            and re.fullmatch(r"[A-Z_][A-Z0-9_]*", target.id)
        ):
            candidates[target.id] = value
    if not candidates:
        return ()
    bindings = _binding_counts(tree, candidates.keys())
    if bindings is None:
        return ()  # a star import may bind any name
    found: list[tuple[str, int]] = []
    for name, value in candidates.items():
        constant = _integer_of(value) if bindings.get(name) == 1 else None
        if constant is not None:
            found.append((name, constant))
    return tuple(found)


def _binding_counts(tree: ast.AST, names: Iterable[str]) -> dict[str, int] | None:
    """How many times the module binds (or deletes) each of `names` anywhere in it, or None
    where it holds a star import (which may bind any name), in one walk over the nodes' fields
    that looks each node's kind up once in `_BOUND` (`ast.walk`'s generators and a test of
    every kind per node cost a module of a few thousand lines tens of milliseconds)."""
    wanted = set(names)
    counts: dict[str, int] = {}
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        bound = _BOUND.get(type(node))
        if bound is not None:
            if isinstance(node, ast.ImportFrom):
                if any(a.name == "*" for a in node.names):
                    return None
            else:
                for name in bound(node):
                    if name in wanted:
                        counts[name] = counts.get(name, 0) + 1
            if type(node) is ast.Name:
                continue  # nothing below a name but its context
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return counts


def _named(name: str | None) -> tuple[str, ...]:
    return () if name is None else (name,)


# The names a node binds (or deletes) where it stands, by the node's kind; `ast.ImportFrom` is
# here for its star import (its names are its `ast.alias` nodes').
_BOUND: dict[type[ast.AST], Callable[[Any], tuple[str, ...]]] = {
    ast.Name: lambda n: (n.id,) if type(n.ctx) is not ast.Load else (),
    ast.arg: lambda n: (n.arg,),
    ast.FunctionDef: lambda n: (n.name,),
    ast.AsyncFunctionDef: lambda n: (n.name,),
    ast.ClassDef: lambda n: (n.name,),
    ast.alias: lambda n: (n.asname or n.name.split(".")[0],),
    ast.Global: lambda n: tuple(n.names),
    ast.Nonlocal: lambda n: tuple(n.names),
    ast.ExceptHandler: lambda n: _named(n.name),
    ast.MatchAs: lambda n: _named(n.name),
    ast.MatchStar: lambda n: _named(n.name),
    ast.MatchMapping: lambda n: _named(n.rest),
    ast.ImportFrom: lambda n: (),
}


def _integer_of(node: ast.expr) -> int | None:
    """An integer literal, or a shift or product of such (nested), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value if len(str(abs(node.value))) <= _MAX_CONSTANT_DIGITS else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.Mult)):
        left, right = _integer_of(node.left), _integer_of(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.LShift):
            return left << right if 0 <= right <= _MAX_SHIFT else None
        product = left * right
        return product if len(str(abs(product))) <= _MAX_CONSTANT_DIGITS else None
    return None


def module_parts(path: str) -> tuple[str, ...]:
    """A file's path as the components of its module (`pkg/mod.py` -> pkg, mod; a package's
    `__init__.py` is the package)."""
    parts = [p for p in re.split(r"[\\/]+", path) if p and p != "."]
    if parts and parts[-1].endswith(".py"):
        parts[-1] = parts[-1][: -len(".py")]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return tuple(parts)


def absolute_module(module: str, importer: SourceFile) -> tuple[str, ...] | None:
    """The components of `module` as `importer` names it: a relative module resolved against
    the importer's package (None: it climbs above the importer's path)."""
    level = len(module) - len(module.lstrip("."))
    rest = tuple(p for p in module[level:].split(".") if p)
    if level == 0:
        return rest
    package = module_parts(importer.path)
    if not importer.path.endswith("__init__.py"):
        package = package[:-1]
    if level - 1 > len(package):
        return None
    return package[: len(package) - (level - 1)] + rest


@dataclass(frozen=True)
class Resolved:
    """Where a call's name led: the function's `def` block, or why there is none. `files` are
    the files the resolution read (the definition's, the re-exporting packages')."""

    definition: tuple[SourceFile, Block] | None
    reason: str
    files: tuple[SourceFile, ...] = ()

    def function(self) -> FunctionSource:
        """The function, parsed (SourceError where it cannot be)."""
        assert self.definition is not None
        source, block = self.definition
        return source.function_source(block)


class FunctionIndex:
    """The module-level `def` blocks of the scanned tree, by file and name, and the files by
    module path: built from the blocks each file's reading found (no parse), parsed on use."""

    def __init__(self, files: Iterable[SourceFile]) -> None:
        files = list(files)
        self._defs: dict[str, list[tuple[SourceFile, Block]]] = {}
        self._modules: dict[tuple[str, ...], list[SourceFile]] = {}
        for source in files:
            parts = module_parts(source.path)
            # Every suffix of the path is a module name the file may be imported by (the tree
            # may be scanned from any folder above its packages).
            for start in range(len(parts)):
                self._modules.setdefault(parts[start:], []).append(source)
            for block in source.blocks:
                if block.kind == "def":
                    self._defs.setdefault(block.name, []).append((source, block))
        self._by_path = {source.path: source for source in files}
        # The first components of the tree's module names: an absolute import of another
        # package (`torch`, `triton`) is no business of the index.
        self._packages = {parts[0] for parts in self._modules if parts}
        self._asked: set[str] | None = None  # see `recording`
        # Resolutions by (importer, name) and imports by file: a scan's files do not change.
        self._resolved: dict[tuple[str, str], Resolved] = {}
        self._imports: dict[str, dict[str, Imported]] = {}

    def imports(self, source: SourceFile) -> dict[str, Imported]:
        found = self._imports.get(source.path)
        if found is None:
            found = self._imports[source.path] = file_imports(source)
        return found

    def named(self, name: str) -> list[tuple[SourceFile, Block]]:
        """The module-level `def` blocks named `name`, anywhere in the tree."""
        return list(self._defs.get(name, []))

    @contextmanager
    def recording(self) -> Iterator[set[str]]:
        """The lookups (`lookup_key`) made inside the `with`: what a file's analysis read of
        other files' functions (`idxcheck.incremental.parts`)."""
        asked: set[str] = set()
        outer, self._asked = self._asked, asked
        try:
            yield asked
        finally:
            # A recording inside another (one block's, inside its file's) adds to it too.
            if outer is not None:
                outer |= asked
            self._asked = outer

    def signature(self, key: str) -> tuple[tuple[str, str], ...]:
        """What the lookup `key` depends on: the files its resolution reads now (a new file
        that makes a module name ambiguous changes it too). The file that defines the function
        counts by the digest of its code: the function is interpreted with the helpers and
        imports beside it. A file the resolution only passed through (a package re-exporting
        the name), or where it found no function (the name is a class: `Dispatcher(...)`),
        counts by what the resolution read there, its top-level `def` names and its imports,
        so that an edit of a class's method there keeps the stored analyses of its callers."""
        path, dotted = key.split("\0", 1)
        resolved = self._resolve_at(path, dotted)
        defining = resolved.definition[0] if resolved.definition is not None else None
        return tuple(
            (s.path, s.code_digest() if s is defining else self._names_digest(s))
            for s in resolved.files
        )

    def _names_digest(self, source: SourceFile) -> str:
        """A digest of what resolving a name reads of a file: the names of its top-level
        `def` blocks (with their counts: a name defined twice resolves to nothing) and the
        names it imports."""
        defs = sorted(b.name for b in source.blocks if b.kind == "def")
        imports = sorted(
            f"{local}\0{found.module}\0{found.name or ''}"
            for local, found in self.imports(source).items()
        )
        text = "\n".join(["defs", *defs, "imports", *imports])
        return "names:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def files_of(self, key: str) -> tuple[SourceFile, ...]:
        path, dotted = key.split("\0", 1)
        return self._resolve_at(path, dotted).files

    def _resolve_at(self, path: str, dotted: str) -> Resolved:
        importer = self._by_path.get(path)
        if importer is None:
            return Resolved(None, f"`{dotted}`: its file is no longer scanned")
        return self._resolve(dotted, importer)

    def lookup(self, dotted: str, near: SourceFile) -> Resolved | None:
        """The definition a call of `dotted` (`f`, `m.f`, `pkg.m.f`) in `near` reaches: a
        module-level function of `near`, or one `near` imports from a file of the tree. None
        where the name is neither (a library's, a local's): the caller models it otherwise."""
        first = dotted.split(".", 1)[0]
        if "." not in dotted and any(b.kind == "def" for b in near.blocks_named(dotted)):
            return self._resolve(dotted, near)
        imported = self.imports(near).get(first)
        if imported is None or (
            not imported.module.startswith(".")
            and imported.module.split(".")[0] not in self._packages
        ):
            return None
        if self._asked is not None:
            self._asked.add(f"{near.path}\0{dotted}")
        return self._resolve(dotted, near)

    def module_alias(self, name: str, near: SourceFile) -> bool:
        """Whether `name` is a module of the tree that `near` imports (`import a.b as m`,
        `from . import utils`): its attributes are then looked up as functions."""
        imported = self.imports(near).get(name)
        if imported is None:
            return False
        if imported.name is None:
            target = absolute_module(imported.module, near)
        else:
            base = absolute_module(imported.module, near)
            target = None if base is None else (*base, imported.name)
        return target is not None and len(self._modules.get(target, [])) == 1

    def _resolve(self, dotted: str, near: SourceFile) -> Resolved:
        key = (near.path, dotted)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve_anew(dotted, near)
        return found

    def _resolve_anew(self, dotted: str, near: SourceFile) -> Resolved:
        parts = dotted.split(".")
        files: list[SourceFile] = []
        source = near
        for _hop in range(MAX_REEXPORTS + 1):
            if len(parts) == 1:
                defs = [b for b in source.blocks_named(parts[0]) if b.kind == "def"]
                if len(defs) > 1:
                    return Resolved(
                        None, f"`{parts[0]}` is defined more than once in {source.path}", ()
                    )
                if defs:
                    return Resolved((source, defs[0]), "", tuple(files))
            imported = self.imports(source).get(parts[0])
            if imported is None:
                return Resolved(
                    None, f"`{'.'.join(parts)}` is not a function of {source.path}", tuple(files)
                )
            base = absolute_module(imported.module, source)
            if base is None:
                return Resolved(None, f"`{imported.module}` climbs above the scanned folders")
            module = base if imported.name is None else (*base, imported.name)
            # `module` may be a module (`from pkg import mod`; `import pkg.mod as m`), then the
            # next component is its attribute; else `name` is a function of `base`.
            rest = parts[1:]
            target_parts, wanted = module, rest
            if imported.name is not None and module not in self._modules:
                target_parts, wanted = base, [imported.name, *rest]
            while len(wanted) > 1 and (*target_parts, wanted[0]) in self._modules:
                target_parts, wanted = (*target_parts, wanted[0]), wanted[1:]
            shown = _shown(imported.module, base, target_parts)
            candidates = self._modules.get(tuple(target_parts), [])
            if len(wanted) > 1 or not candidates:
                return Resolved(
                    None,
                    f"`{dotted}` is imported from `{shown}`, which is not a file among those "
                    "idxcheck reads",
                    tuple(files),
                )
            if len(candidates) > 1:
                return Resolved(
                    None,
                    f"`{dotted}` is imported from `{shown}`, which more than one scanned file "
                    "may be",
                    tuple(files),
                )
            if not wanted:
                return Resolved(None, f"`{dotted}` is a module, not a function", tuple(files))
            source, parts = candidates[0], wanted
            files.append(source)
        return Resolved(
            None, f"`{dotted}` is re-exported more than {MAX_REEXPORTS} times", tuple(files)
        )


def _shown(written: str, base: tuple[str, ...], target: tuple[str, ...]) -> str:
    """A module as the import wrote it (`.utils`, `pkg.mod`), with the submodules the name
    went on into."""
    more = ".".join(target[len(base) :])
    if not more:
        return written
    return f"{written}{more}" if written.endswith(".") else f"{written}.{more}"
