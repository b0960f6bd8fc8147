"""The libcst classes the checker tests by exact type (`type(node) is cst.Name`) have no
subclasses, so that the test means what `isinstance` would.

The interpreter and the readers test node kinds by exact type where `isinstance` would be
slow: libcst's classes are made by `ABCMeta`, whose `__instancecheck__` is a Python call for
every test that fails. The test is the same only while libcst subclasses none of these
classes; a libcst release that did would make the checker miss nodes silently, so this fails
first."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("checker", "rules")


def _cst_names(node: ast.expr) -> list[str]:
    """The `cst.X` classes an expression names (alone, or in a tuple, list or set)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return [node.attr] if node.value.id == "cst" else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _cst_names(element)]
    return []


def _is_type_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
    )


def exact_type_classes(source: str) -> dict[str, int]:
    """The `cst.X` classes `source` compares a `type(...)` with (`is`, `is not`, `in`, `not
    in`), each with the line of its first use. A comparison with a name (`type(n) in kinds`)
    counts the classes assigned to that name in the same function."""
    tree = ast.parse(source)
    found: dict[str, int] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        assigned: dict[str, list[str]] = {}
        types: set[str] = set()  # names assigned a `type(...)`: `kind = type(operator)`
        for node in ast.walk(function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute | ast.Name):
                        key = target.attr if isinstance(target, ast.Attribute) else target.id
                        assigned.setdefault(key, []).extend(_cst_names(node.value))
                        if isinstance(target, ast.Name) and _is_type_call(node.value):
                            types.add(target.id)
        for node in ast.walk(function):
            if not isinstance(node, ast.Compare):
                continue
            left = node.left
            if not (_is_type_call(left) or (isinstance(left, ast.Name) and left.id in types)):
                continue
            for operator, compared in zip(node.ops, node.comparators, strict=True):
                if not isinstance(operator, ast.Is | ast.IsNot | ast.In | ast.NotIn):
                    continue
                names = _cst_names(compared)
                if isinstance(compared, ast.Name):
                    names = assigned.get(compared.id, [])
                for name in names:
                    found.setdefault(name, node.lineno)
    return found


def subclassed(name: str) -> list[str]:
    """libcst's subclasses of `cst.<name>` (every module of libcst is loaded first)."""
    cls = getattr(cst, name)
    assert inspect.isclass(cls), f"cst.{name} is not a class"
    return sorted(sub.__qualname__ for sub in cls.__subclasses__())


def test_every_class_tested_by_exact_type_has_no_subclass() -> None:
    checked: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, line in exact_type_classes(path.read_text()).items():
                checked.setdefault(name, f"{path.relative_to(ROOT)}:{line}")
    # The interpreter's and the readers' hot tests are among those found: a walk that found
    # none would pass whatever libcst does.
    assert {"Name", "Attribute", "Subscript", "Assign", "For"} <= set(checked)
    wrong = {name: (where, subclassed(name)) for name, where in checked.items() if subclassed(name)}
    assert not wrong, f"tested by exact type, yet subclassed in libcst: {wrong}"


def test_the_walk_finds_each_form_and_a_subclassed_class_fails() -> None:
    source = (
        "def f(node, other):\n"
        "    kinds = {cst.For, cst.While}\n"
        "    if type(node) is cst.Name or type(other) is not cst.Attribute:\n"
        "        return type(node) in kinds or type(node) in (cst.Try, cst.If)\n"
        "    kind = type(other)\n"
        "    return kind is cst.Is or isinstance(node, cst.BaseExpression)\n"
    )
    assert exact_type_classes(source) == {
        "Name": 3,
        "Attribute": 3,
        "For": 4,
        "While": 4,
        "Try": 4,
        "If": 4,
        "Is": 6,
    }
    # An abstract libcst class has subclasses: tested by exact type, the first test fails.
    assert subclassed("BaseExpression")
    assert not subclassed("Name")
