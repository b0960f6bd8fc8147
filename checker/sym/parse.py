"""Constraint expressions: the profile's domain and `[tool.idxcheck]` overrides are written in
Python expression syntax over symbol names (`implies(topk == 1, ndt == steps + 1)`).

Given the symbols a text may name (a user's constraint: the profile's), a name that is none of
them or of the aliases is an error with the closest known name, not a new free symbol that
silently constrains nothing."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Collection, Mapping

from idxcheck.sym.terms import Const, Formula, Sym, Term, binop, cmp, conj, disj, neg


class ConstraintError(ValueError):
    pass


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
# The operators of Python a constraint cannot use, as they are written, for the message.
_OTHER_OPS = {
    ast.Div: "/",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
# The functions a constraint may call, each with two arguments: a condition's and a term's.
FORMULA_FUNCTIONS = ("implies",)
TERM_FUNCTIONS = ("max", "min")
FUNCTIONS = FORMULA_FUNCTIONS + TERM_FUNCTIONS
_SYNTAX = "terms use integers, symbols, + - * // %, min(a, b), max(a, b)"


def parse_formula(
    text: str, aliases: Mapping[str, str] | None = None, symbols: Collection[str] | None = None
) -> Formula:
    """The condition `text`; with `symbols`, every name must be one of them or an alias."""
    tree = _parse(text, "constraint")
    _check_names(tree.body, text, aliases or {}, symbols)
    try:
        return _formula(tree.body, text, aliases or {})
    except RecursionError:
        raise ConstraintError(f"constraint nested too deeply: {text[:80]!r}...") from None


def parse_term(
    text: str, aliases: Mapping[str, str] | None = None, symbols: Collection[str] | None = None
) -> Term:
    """The integer expression `text`; with `symbols`, as `parse_formula`."""
    tree = _parse(text, "term")
    _check_names(tree.body, text, aliases or {}, symbols)
    try:
        return _term(tree.body, text, aliases or {})
    except RecursionError:
        raise ConstraintError(f"term nested too deeply: {text[:80]!r}...") from None


def _parse(text: str, what: str) -> ast.Expression:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"cannot parse {what} {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ConstraintError(f"cannot parse {what} {text[:80]!r}...: nested too deeply") from None


def _check_names(
    root: ast.expr, text: str, aliases: Mapping[str, str], symbols: Collection[str] | None
) -> None:
    """Every unknown function, and (with `symbols`) every unknown symbol, named at once, each
    with the closest known name."""
    called = {id(node.func) for node in ast.walk(root) if isinstance(node, ast.Call)}
    problems: list[str] = []
    known = None if symbols is None else sorted({*symbols, *aliases})
    dotted: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Attribute) and id(node) not in dotted:
            # `server_args.topk`: one problem for the whole name, not one per part.
            dotted |= {id(part) for part in ast.walk(node.value)}
            hint = "" if known is None else _hint(node.attr, known)
            problems.append(f"unsupported syntax {_unparse(node)}: symbols are plain names{hint}")
        if not isinstance(node, ast.Name) or id(node) in dotted:
            continue
        if id(node) in called:
            if node.id not in FUNCTIONS:
                problems.append(f"unknown function {node.id}{_hint(node.id, FUNCTIONS)}")
        elif known is not None and node.id not in known:
            problems.append(f"unknown symbol {node.id}{_hint(node.id, known)}")
    if problems:
        unique = list(dict.fromkeys(problems))
        more = ""
        if known is not None and any(p.startswith("unknown symbol") for p in unique):
            more = " (`idxcheck symbols` lists the profile's symbols)"
        elif any(p.startswith("unknown function") for p in unique):
            more = f"; the functions are {', '.join(f'{f}(a, b)' for f in FUNCTIONS)}"
        raise ConstraintError(f"{'; '.join(unique)} in {text!r}{more}")


def _hint(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _formula(node: ast.expr, text: str, aliases: Mapping[str, str]) -> Formula:
    if isinstance(node, ast.BoolOp):
        parts = [_formula(v, text, aliases) for v in node.values]
        return conj(*parts) if isinstance(node.op, ast.And) else disj(*parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return neg(_formula(node.operand, text, aliases))
    if isinstance(node, ast.Compare):
        if not all(type(op) in _CMPOPS for op in node.ops):
            raise ConstraintError(
                f"unsupported comparison {_unparse(node)!r} in {text!r}: "
                "conditions compare with == != < <= > >="
            )
        pieces: list[Formula] = []
        left = _term(node.left, text, aliases)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _term(comparator, text, aliases)
            pieces.append(cmp(_CMPOPS[type(op)], left, right))
            left = right
        return conj(*pieces)
    if _called(node, FORMULA_FUNCTIONS, text):
        assert isinstance(node, ast.Call)
        return disj(
            neg(_formula(node.args[0], text, aliases)), _formula(node.args[1], text, aliases)
        )
    raise ConstraintError(
        f"not a condition: {_unparse(node)!r} in {text!r} "
        "(conditions are comparisons joined by and, or, not, implies(a, b))"
    )


def _term(node: ast.expr, text: str, aliases: Mapping[str, str]) -> Term:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return Const(node.value)
    if isinstance(node, ast.Name):
        return Sym(aliases.get(node.id, node.id))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return binop(
            _BINOPS[type(node.op)],
            _term(node.left, text, aliases),
            _term(node.right, text, aliases),
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return binop("-", Const(0), _term(node.operand, text, aliases))
    if _called(node, TERM_FUNCTIONS, text):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return binop(
            node.func.id, _term(node.args[0], text, aliases), _term(node.args[1], text, aliases)
        )
    raise ConstraintError(f"{_not_a_term(node)} in {text!r}; {_SYNTAX}")


def _called(node: ast.expr, names: tuple[str, ...], text: str) -> bool:
    """Whether `node` calls one of `names`, with the two positional arguments each takes."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    if node.func.id not in names:
        return False
    if len(node.args) != 2 or node.keywords:
        given = len(node.args) + len(node.keywords)
        raise ConstraintError(
            f"{node.func.id}() takes 2 arguments, got {given} in {text!r}"
            + ("" if not node.keywords else " (no keywords)")
        )
    return True


def _not_a_term(node: ast.expr) -> str:
    """What is wrong with a piece of syntax that is not an integer expression."""
    shown = _unparse(node)
    if isinstance(node, ast.BinOp):
        op = _OTHER_OPS.get(type(node.op), type(node.op).__name__)
        return f"unsupported operator {op} ({shown!r})"
    if isinstance(node, ast.UnaryOp):
        return f"unsupported operator ({shown!r})"
    if isinstance(node, ast.Constant):
        return f"not an integer: {shown}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        return f"{node.func.id}(...) is a condition, not an integer expression: {shown!r}"
    if isinstance(node, ast.Call):
        return f"unsupported call {shown!r}"
    if isinstance(node, ast.Compare | ast.BoolOp):
        return f"a condition where an integer expression belongs: {shown!r}"
    return f"not an integer expression: {shown!r}"


def _unparse(node: ast.expr) -> str:
    return ast.unparse(node)
