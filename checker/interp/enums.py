"""Members of plain enums of the scanned tree (`QueryLenSupport.SINGLE_ONLY`) as constants.

A member of a class whose only base is `Enum` and whose members are all assigned distinct
literals (or `auto()`) equals itself and no other member, and no value of another type: it is
read as a string constant no source string can spell, so that comparing two members decides.
Any other class (a `str` or `int` mixin, whose members equal their values; a `Flag`, whose
members combine; a member assigned an expression, which may alias another) is not read, and
its members stay unknown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from idxcheck.interp.state import ScanContext
from idxcheck.interp.values import StrV
from idxcheck.source.files import ClassSource
from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

# No string literal holds a NUL and these words: a member is equal to nothing but itself.
MEMBER_PREFIX = "\0enum member "
PLAIN_ENUM_BASES = (["Enum"],)

# By the class's node, which the entry keeps alive (so that its id is not reused).
_MEMBERS: dict[int, tuple[cst.ClassDef, frozenset[str] | None]] = {}


def plain_enum_members(cls: ClassSource) -> frozenset[str] | None:
    """The members of `cls` where it is a plain enum with distinct literal values, else None."""
    key = id(cls.node)
    if key in _MEMBERS:
        return _MEMBERS[key][1]
    found: frozenset[str] | None = None
    if cls.base_names() in PLAIN_ENUM_BASES:
        found = _members(cls.node)
    if len(_MEMBERS) > 10_000:
        _MEMBERS.clear()
    _MEMBERS[key] = (cls.node, found)
    return found


def _members(node: cst.ClassDef) -> frozenset[str] | None:
    names: list[str] = []
    values: list[tuple[str, object]] = []
    body = node.body
    for line in body.body if type(body) is cst.IndentedBlock else ():
        if type(line) is not cst.SimpleStatementLine:
            continue  # methods and nested classes are no members
        for stmt in line.body:
            if type(stmt) is cst.Expr:
                continue  # a docstring
            if not (type(stmt) is cst.Assign and len(stmt.targets) == 1):
                return None
            target = stmt.targets[0].target
            if type(target) is not cst.Name or target.value.startswith("_"):
                return None
            value = _literal(stmt.value, len(names))
            if value is None:
                return None
            names.append(target.value)
            values.append(value)
    if not names or len(set(values)) != len(values):
        return None  # an alias (two names of one value) is one member
    kinds = {kind for kind, _ in values}
    if "auto" in kinds and len(kinds) > 1:
        return None  # `auto()` beside literals may take a literal's value
    return frozenset(names)


def _literal(node: cst.BaseExpression, index: int) -> tuple[str, object] | None:
    if type(node) is cst.Integer:
        return ("int", node.evaluated_value)
    if type(node) is cst.SimpleString:
        return ("str", node.evaluated_value)
    if (
        type(node) is cst.Call
        and isinstance(node.func, (cst.Name, cst.Attribute))
        and not node.args
        and (node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value) == "auto"
    ):
        return ("auto", index)  # distinct from every other member's
    return None


def enum_member(node: cst.BaseExpression, file: object, ctx: ScanContext) -> StrV | None:
    """`Class.MEMBER` as a constant where `Class` is a plain enum of the scanned tree that
    has that member; None otherwise."""
    if not (type(node) is cst.Attribute and type(node.value) is cst.Name):
        return None
    if ctx.class_lookup is None:
        return None
    cls = ctx.class_lookup(node.value.value, file)
    if not isinstance(cls, ClassSource):
        return None
    members = plain_enum_members(cls)
    if members is None or node.attr.value not in members:
        return None
    return StrV(f"{MEMBER_PREFIX}{cls.name}.{node.attr.value}")
