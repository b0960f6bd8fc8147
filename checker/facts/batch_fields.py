"""The fields a graph runner's batch always carries, read from the runner's class.

A runner builds the batch it hands the backend (`ForwardBatch(..., extend_seq_lens_cpu=...)`,
the profile's `RUNNER_BATCH_CLASSES`). A field that every such construction in the class sets
to a value that is never None, and that no method of the class sets otherwise, is carried by
every batch of that runner. A backend's test of that field against None
(`forward_batch.extend_seq_lens_cpu is None`, the condition `none:extend_seq_lens_cpu`) is
then false in the runs compared with the runner's width.

"Never None" is decided on the text alone (CPython's tree of the class), within a small depth:
a list, tuple, dict or set display or comprehension, a number or string, arithmetic, a slice,
a conditional whose arms are both never None, a local name each of whose assignments is never
None, or a `self` attribute each of whose assignments in the class is. Anything else (a call,
a parameter, an element of a container) may be None, and the field is not taken as carried."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from idxcheck.source.files import ClassSource, SourceError

# How many names or attributes a value is followed through.
_DEPTH = 4
# Calls of builtins that return a value of their own kind, never None.
_NEVER_NONE_CALLS = frozenset({"list", "tuple", "dict", "set", "int", "len", "range", "sorted"})

Method = ast.FunctionDef | ast.AsyncFunctionDef


def carried_fields(cls: ClassSource, batch_classes: tuple[str, ...]) -> tuple[str, ...]:
    """The fields every batch `cls` builds of one of `batch_classes` sets to a value that is
    never None, sorted; () where it builds none or its class does not parse."""
    if not batch_classes:
        return ()
    try:
        node, _ = cls.file.cpython_class(cls.block)
    except SourceError:
        return ()
    methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found: set[str] | None = None
    for method in methods:
        for call in _calls_of(method, batch_classes):
            fields = {
                kw.arg
                for kw in call.keywords
                if kw.arg is not None and _never_none(kw.value, method, node, _DEPTH)
            }
            found = fields if found is None else found & fields
    if not found:
        return ()
    # A field the class sets on some object after building it may be set to None there.
    for method in methods:
        for target, value in _attribute_stores(method):
            if target.attr in found and not (
                value is not None and _never_none(value, method, node, _DEPTH)
            ):
                found.discard(target.attr)
    return tuple(sorted(found))


def _calls_of(method: Method, names: tuple[str, ...]) -> Iterator[ast.Call]:
    for sub in ast.walk(method):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else None
            )
            if name in names:
                yield sub


def _attribute_stores(method: Method) -> Iterator[tuple[ast.Attribute, ast.expr | None]]:
    """Each attribute written in `method` and the value written (None where the value is not
    one expression: a tuple target, a loop or `with` target, an augmented store)."""
    for sub in ast.walk(method):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Attribute):
                    yield target, sub.value
                else:
                    yield from ((a, None) for a in _stored_attributes(target))
        elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Attribute):
            if sub.value is not None:
                yield sub.target, sub.value
        elif isinstance(sub, (ast.AugAssign, ast.For, ast.AsyncFor)):
            yield from ((a, None) for a in _stored_attributes(sub.target))
        elif isinstance(sub, ast.withitem) and sub.optional_vars is not None:
            yield from ((a, None) for a in _stored_attributes(sub.optional_vars))


def _stored_attributes(target: ast.expr) -> Iterator[ast.Attribute]:
    for inner in ast.walk(target):
        if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
            yield inner


def _never_none(expr: ast.expr, method: Method, cls: ast.ClassDef, depth: int) -> bool:
    if depth < 0:
        return False
    if isinstance(
        expr,
        (
            ast.List,
            ast.Tuple,
            ast.Dict,
            ast.Set,
            ast.ListComp,
            ast.SetComp,
            ast.DictComp,
            ast.JoinedStr,
            ast.BinOp,
            ast.UnaryOp,
            ast.Compare,
        ),
    ):
        return True
    if isinstance(expr, ast.Constant):
        return expr.value is not None
    if isinstance(expr, ast.Subscript):
        return isinstance(expr.slice, ast.Slice)
    if isinstance(expr, ast.IfExp):
        return _never_none(expr.body, method, cls, depth) and _never_none(
            expr.orelse, method, cls, depth
        )
    if isinstance(expr, ast.Call):
        return isinstance(expr.func, ast.Name) and expr.func.id in _NEVER_NONE_CALLS
    if isinstance(expr, ast.Name):
        values = _local_values(method, expr.id)
        return bool(values) and all(
            v is not None and _never_none(v, method, cls, depth - 1) for v in values
        )
    if (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "self"
    ):
        stores = [
            (m, value)
            for m in cls.body
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            for target, value in _attribute_stores(m)
            if target.attr == expr.attr
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ]
        return bool(stores) and all(
            value is not None and _never_none(value, m, cls, depth - 1) for m, value in stores
        )
    return False


def _local_values(method: Method, name: str) -> list[ast.expr | None]:
    """The values bound to the local `name` in `method`, nested functions included (None for
    a binding that is not one expression: a parameter, a loop or `with` target, a tuple
    target, an augmented store, a walrus, an import)."""
    arguments = method.args
    params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    params += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    values: list[ast.expr | None] = [None for a in params if a.arg == name]
    for sub in ast.walk(method):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(sub.value)
                elif _binds(target, name):
                    values.append(None)
        elif isinstance(sub, ast.AnnAssign):
            if isinstance(sub.target, ast.Name) and sub.target.id == name:
                values.append(sub.value)
        elif isinstance(sub, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
            if _binds(sub.target, name):
                values.append(None)
        elif isinstance(sub, ast.NamedExpr):
            if sub.target.id == name:
                values.append(None)
        elif isinstance(sub, ast.withitem):
            if sub.optional_vars is not None and _binds(sub.optional_vars, name):
                values.append(None)
        elif isinstance(sub, ast.arg) and sub.arg == name and sub not in params:
            values.append(None)  # a nested function's or lambda's parameter
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in sub.names):
                values.append(None)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            values.append(None)
    return values


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))
