"""The generic walk of a libcst tree: every node under a root, read from the nodes' fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")


_CHILD_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


# Fields that hold formatting alone: whitespace, comments, blank lines, brackets, commas, dots
# and equal signs. Most nodes of a method's tree are formatting (bench/RESULTS.md, "What each
# change did", and "Measurements that stood in code comments"), and no caller of `descendants`
# looks for one.
_FORMATTING_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "dot",
        "equal",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
    }
)


def _child_fields(node: cst.CSTNode) -> tuple[str, ...]:
    return tuple(
        f.name
        for f in dataclasses.fields(node)
        if f.name not in _FORMATTING_FIELDS and "whitespace" not in f.name
    )


def descendants(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node under it but formatting (`_FORMATTING_FIELDS`), in source order
    (pre-order), by reading the nodes' fields: a libcst visitor rebuilds each node it passes
    and costs far more (bench/RESULTS.md, "Measurements that stood in code comments")."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes directly below `node` but formatting, in field order: the step of
    `descendants`, for a walk of its own (one that keeps each node's parents, or stops at some
    kinds of node)."""
    names = _CHILD_FIELDS.get(type(node))
    if names is None:
        names = _CHILD_FIELDS[type(node)] = _child_fields(node)
    kinds = _KINDS
    found: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        kind = kinds.get(type(value)) or _kind(type(value))
        if kind is _NODE:
            found.append(value)
        elif kind is _SEQUENCE:
            found.extend(
                item for item in value if (kinds.get(type(item)) or _kind(type(item))) is _NODE
            )
    return found


_NODE = "node"


_SEQUENCE = "sequence"


_OTHER = "other"


_KINDS: dict[type, str] = {}


def _kind(cls: type) -> str:
    """Whether a field's value is a node, a list or tuple (of nodes, perhaps), or neither,
    remembered per type: `isinstance` against libcst's abstract `CSTNode` goes through
    `ABCMeta.__instancecheck__`, which showed in a cold scan's profile under `descendants`
    (bench/RESULTS.md, "What each change did")."""
    found = _KINDS.get(cls)
    if found is None:
        if issubclass(cls, cst.CSTNode):
            found = _NODE
        elif issubclass(cls, (list, tuple)):
            found = _SEQUENCE
        else:
            found = _OTHER
        _KINDS[cls] = found
    return found
