"""Constraint expressions: the profile's domain and `[tool.idxcheck]` overrides are written in
Python expression syntax over symbol names (`implies(topk == 1, ndt == steps + 1)`)."""

from __future__ import annotations

import ast

from idxcheck.sym.terms import Const, Formula, Sym, Term, binop, cmp, conj, disj, neg


class ConstraintError(ValueError):
    pass


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def parse_formula(text: str, aliases: dict[str, str] | None = None) -> Formula:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"cannot parse constraint {text!r}: {exc.msg}") from None
    return _formula(tree.body, text, aliases or {})


def parse_term(text: str, aliases: dict[str, str] | None = None) -> Term:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"cannot parse term {text!r}: {exc.msg}") from None
    return _term(tree.body, text, aliases or {})


def _formula(node: ast.expr, text: str, aliases: dict[str, str]) -> Formula:
    if isinstance(node, ast.BoolOp):
        parts = [_formula(v, text, aliases) for v in node.values]
        return conj(*parts) if isinstance(node.op, ast.And) else disj(*parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return neg(_formula(node.operand, text, aliases))
    if isinstance(node, ast.Compare):
        pieces: list[Formula] = []
        left = _term(node.left, text, aliases)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _term(comparator, text, aliases)
            opname = _CMPOPS.get(type(op))
            if opname is None:
                raise ConstraintError(f"unsupported comparison in {text!r}")
            pieces.append(cmp(opname, left, right))
            left = right
        return conj(*pieces)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "implies"
        and len(node.args) == 2
        and not node.keywords
    ):
        return disj(
            neg(_formula(node.args[0], text, aliases)), _formula(node.args[1], text, aliases)
        )
    raise ConstraintError(f"not a condition: {ast.unparse(node)!r} in {text!r}")


def _term(node: ast.expr, text: str, aliases: dict[str, str]) -> Term:
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
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("max", "min")
        and len(node.args) == 2
    ):
        return binop(
            node.func.id, _term(node.args[0], text, aliases), _term(node.args[1], text, aliases)
        )
    raise ConstraintError(f"not an integer expression: {ast.unparse(node)!r} in {text!r}")
