"""The symbolic IR: integer terms and boolean formulas over configuration symbols, the batch
size, the runtime width of the forward mode under check, and opaque conditions.

Solver-free on purpose: extraction and rules build these, `idxcheck.solve` alone turns them
into z3. Every node is a frozen dataclass, so structurally equal terms compare and hash equal,
which is what the verdict cache keys on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from idxcheck.model.spans import Loc
from idxcheck.sym.node import node

# ---------------------------------------------------------------------------------------------
# Integer terms


@node
class Const:
    value: int


@node
class Sym:
    """A configuration symbol (`speculative_num_steps`), the batch size (`bs`), ..."""

    name: str


@node
class RuntimeWidth:
    """The query tokens per request that the runtime lays out in the mode under check.

    A backend that reads its width from the runtime (`spec_info.num_tokens_per_req`, or
    `num_tokens // bs`) gets this term, which makes it consistent by construction."""


@node
class RuntimeInt:
    """An integer computed from runtime data (`max(forward_batch.extend_seq_lens_cpu)`):
    derived from the actual layout, so never a finding, and never a guess either."""

    source: str


@node
class Unknown:
    """An integer the extractor cannot model; obligations that depend on it are UNSUPPORTED."""

    reason: str


@node
class BinOp:
    op: str  # one of + - * // % max min
    left: Term
    right: Term


@node
class Ite:
    cond: Formula
    then: Term
    other: Term


@node
class Tagged:
    """Provenance: `inner` was written at `loc` (whose `text` is the source there).
    Transparent to semantics."""

    inner: Term
    loc: Loc


Term = Const | Sym | RuntimeWidth | RuntimeInt | Unknown | BinOp | Ite | Tagged

# The prefix of the free symbol of a count padded to a CUDA-graph capture size (a profile's
# padding methods): `Ite(count <= p <= largest, p, count)`, `p` hidden from counterexamples (a
# name beginning with `@`).
PADDED_PREFIX = "@padded:"

# ---------------------------------------------------------------------------------------------
# Formulas


@node
class BoolConst:
    value: bool


@node
class Cmp:
    op: str  # == != < <= > >=
    left: Term
    right: Term


@node
class And:
    args: tuple[Formula, ...]


@node
class Or:
    args: tuple[Formula, ...]


@node
class Not:
    arg: Formula


@node
class ModeIs:
    """The forward mode under check is one of `members`."""

    members: frozenset[str]


@node
class Atom:
    """An opaque condition (`spec_info is None`): free in the solver, named in counterexamples."""

    key: str
    text: str


Formula = BoolConst | Cmp | And | Or | Not | ModeIs | Atom

TRUE = BoolConst(True)
FALSE = BoolConst(False)

# ---------------------------------------------------------------------------------------------
# Smart constructors: constant folding only, so that structure (and provenance) is kept.

_CMP_NEGATION = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def strip(term: Term) -> Term:
    while isinstance(term, Tagged):
        term = term.inner
    return term


def const_value(term: Term) -> int | None:
    term = strip(term)
    return term.value if isinstance(term, Const) else None


def binop(op: str, left: Term, right: Term) -> Term:
    lv, rv = const_value(left), const_value(right)
    if lv is not None and rv is not None:
        folded = fold_binop(op, lv, rv)
        if folded is not None:
            return Const(folded)
    if op == "+" and rv == 0:
        return left
    if op == "+" and lv == 0:
        return right
    if op == "-" and rv == 0:
        return left
    if op == "*" and rv == 1:
        return left
    if op == "*" and lv == 1:
        return right
    if op == "//" and rv == 1:
        return left
    return BinOp(op, left, right)


def fold_binop(op: str, a: int, b: int) -> int | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "//":
        return a // b if b != 0 else None
    if op == "%":
        return a % b if b != 0 else None
    if op == "max":
        return max(a, b)
    if op == "min":
        return min(a, b)
    raise ValueError(f"unknown operator {op}")


def cdiv(a: Term, b: Term) -> Term:
    """`triton.cdiv(a, b)` == (a + b - 1) // b."""
    return binop("//", binop("-", binop("+", a, b), Const(1)), b)


def ite(cond: Formula, then: Term, other: Term) -> Term:
    if cond == TRUE:
        return then
    if cond == FALSE:
        return other
    if then == other:
        return then
    return Ite(cond, then, other)


def cmp(op: str, left: Term, right: Term) -> Formula:
    lv, rv = const_value(left), const_value(right)
    if lv is not None and rv is not None:
        return BoolConst(compare(op, lv, rv))
    if strip(left) == strip(right) and op in ("==", "<=", ">="):
        return TRUE
    if strip(left) == strip(right) and op in ("!=", "<", ">"):
        return FALSE
    return Cmp(op, left, right)


def compare(op: str, a: int, b: int) -> bool:
    return {
        "==": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


def conjuncts(formula: Formula) -> tuple[Formula, ...]:
    return formula.args if isinstance(formula, And) else (() if formula == TRUE else (formula,))


def relative_to(formula: Formula, context: Formula) -> Formula:
    """`formula` without the conjuncts it shares with `context`: what it adds to it."""
    known = set(map(id, conjuncts(context)))
    shared = conjuncts(context)
    return conj(*(c for c in conjuncts(formula) if id(c) not in known and c not in shared))


# `conj` and `disj` answers by their arguments (interned, so hashed and compared by identity;
# the key holds them, so no id is reused while it lives). Dropped with `forget_specialisations`
# after each file. The interpreter asks the same conjunctions and disjunctions again and again
# as it re-enters helpers and joins branches (bench/RESULTS.md, "What each change did").
_CONJ_MEMO: dict[tuple[Formula, ...], Formula] = {}
_DISJ_MEMO: dict[tuple[Formula, ...], Formula] = {}
# Either memo is emptied when it reaches this many entries (a file's analysis that builds
# more keeps memory bounded; the answers stay the same).
MAX_MEMO = 500_000


def conj(*args: Formula) -> Formula:
    found = _CONJ_MEMO.get(args)
    if found is None:
        if len(_CONJ_MEMO) >= MAX_MEMO:
            _CONJ_MEMO.clear()
        found = _CONJ_MEMO[args] = _conj(args)
    return found


def disj(*args: Formula) -> Formula:
    found = _DISJ_MEMO.get(args)
    if found is None:
        if len(_DISJ_MEMO) >= MAX_MEMO:
            _DISJ_MEMO.clear()
        found = _DISJ_MEMO[args] = _disj(args)
    return found


def _conj(args: tuple[Formula, ...]) -> Formula:
    # The interpreter's usual call: a path condition or test and one more condition, neither a
    # conjunction nor a constant (the most common shape: bench/RESULTS.md, "What each change
    # did"). The same answer as the loop below, without its set.
    if len(args) == 2:
        first, second = args
        kinds = (type(first), type(second))
        if And not in kinds and BoolConst not in kinds:
            if second == first:
                return first
            if neg(second) == first:
                return FALSE  # a and not a
            return And((first, second))
    flat: list[Formula] = []
    seen: set[Formula] = set()
    for arg in args:
        if type(arg) is BoolConst:  # what `arg == FALSE`, `arg == TRUE` test, without `_eq`
            if not arg.value:
                return FALSE
            continue
        if not seen and type(arg) is And and _normal(arg):
            # The first conjunction met (a path condition, most often): the loop below would
            # keep each of its parts as they are, so they are kept without a test each.
            flat.extend(arg.args)
            seen.update(arg.args)
            continue
        for part in arg.args if type(arg) is And else (arg,):
            size = len(seen)
            seen.add(part)  # one hash where `in` then `add` took two
            if len(seen) == size:
                continue
            if neg(part) in seen:
                return FALSE  # a and not a
            flat.append(part)
    if not flat:
        return TRUE
    if len(flat) == 1:
        return flat[0]
    return And(tuple(flat))


def _normal(formula: And) -> bool:
    """Whether `_conj`'s loop, meeting `formula` first, keeps each of its parts as they are:
    no part repeats an earlier one, and none is the negation of itself or of an earlier one
    (every conjunction `_conj` builds; one built otherwise, `untag_formula`'s, may not be).
    Kept on the (interned) node, as `neg` keeps its negation."""
    cached = formula.__dict__.get("_normal")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    seen: set[Formula] = set()
    result = True
    for part in formula.args:
        if part in seen:
            result = False
            break
        seen.add(part)
        if neg(part) in seen:
            result = False
            break
    object.__setattr__(formula, "_normal", result)
    return result


def _disj(args: tuple[Formula, ...]) -> Formula:
    flat: list[Formula] = []
    seen: set[Formula] = set()
    for arg in args:
        if arg == TRUE:
            return TRUE
        if arg == FALSE:
            continue
        for part in arg.args if isinstance(arg, Or) else (arg,):
            if part not in seen:
                seen.add(part)
                flat.append(part)
    if not flat:
        return FALSE
    if len(flat) == 1:
        return flat[0]
    factored = _factor_common(flat)
    if factored is not None:
        return factored
    modes = [a for a in flat if isinstance(a, ModeIs)]
    if len(modes) > 1:
        merged = ModeIs(frozenset().union(*(m.members for m in modes)))
        flat = [a for a in flat if not isinstance(a, ModeIs)] + [merged]
        if len(flat) == 1:
            return flat[0]
    return Or(tuple(flat))


def _conjuncts(formula: Formula) -> tuple[Formula, ...]:
    return formula.args if isinstance(formula, And) else (formula,)


def _factor_common(flat: list[Formula]) -> Formula | None:
    """(P and a) or (P and b) == P and (a or b); and (a or not a) == True. Path conditions
    joined after a branch share their prefix, so this keeps them from growing at each join."""
    parts = [_conjuncts(f) for f in flat]
    rest_sets = [set(p) for p in parts[1:]]
    common = [c for c in parts[0] if all(c in other for other in rest_sets)]
    if not common:
        if len(flat) == 2 and (flat[0] == neg(flat[1]) or flat[1] == neg(flat[0])):
            return TRUE
        return None
    common_set = set(common)
    rests = [conj(*(c for c in p if c not in common_set)) for p in parts]
    return conj(*common, disj(*rests))


def neg(arg: Formula) -> Formula:
    # `conj` negates every conjunct it meets; the negation is kept on the (interned) node so
    # that it is built once.
    cached = arg.__dict__.get("_neg")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    result = _neg(arg)
    object.__setattr__(arg, "_neg", result)
    return result


def _neg(arg: Formula) -> Formula:
    if isinstance(arg, BoolConst):
        return BoolConst(not arg.value)
    if isinstance(arg, Not):
        return arg.arg
    if isinstance(arg, Cmp):
        return Cmp(_CMP_NEGATION[arg.op], arg.left, arg.right)
    return Not(arg)


# ---------------------------------------------------------------------------------------------
# Queries


def formula_mentions_mode(formula: Formula) -> bool:
    return any(isinstance(n, ModeIs) for n in _walk(formula))


def _no_change(_node: object) -> None:
    return None


class Rewriter:
    """Rebuilds terms and formulas bottom-up, putting `leaf(node)` wherever it is not None,
    through the folding constructors (so what becomes constant folds). Shared subterms (path
    conditions share their prefixes) are rebuilt once per rewriter."""

    def __init__(
        self,
        term_leaf: Callable[[Term], Term | None] = _no_change,
        formula_leaf: Callable[[Formula], Formula | None] = _no_change,
    ) -> None:
        self.term_leaf = term_leaf
        self.formula_leaf = formula_leaf
        # id -> (node, result): the node is kept, so that its id is not reused by another
        # node while the rewriter lives (a rewriter may outlive one formula: `specialise_*`).
        self.memo: dict[int, tuple[object, Any]] = {}

    def term(self, term: Term) -> Term:
        found = self.memo.get(id(term))
        if found is not None and found[0] is term:
            return found[1]  # type: ignore[no-any-return]
        result = self.term_leaf(term)
        if result is not None:
            pass
        elif isinstance(term, Tagged):
            inner = self.term(term.inner)
            result = term if inner is term.inner else Tagged(inner, term.loc)
        elif isinstance(term, BinOp):
            result = binop(term.op, self.term(term.left), self.term(term.right))
        elif isinstance(term, Ite):
            cond = self.formula(term.cond)
            if cond == TRUE:
                result = self.term(term.then)
            elif cond == FALSE:
                result = self.term(term.other)
            else:
                result = Ite(cond, self.term(term.then), self.term(term.other))
        else:
            result = term
        self.memo[id(term)] = (term, result)
        return result

    def formula(self, formula: Formula) -> Formula:
        found = self.memo.get(id(formula))
        if found is not None and found[0] is formula:
            return found[1]  # type: ignore[no-any-return]
        result = self.formula_leaf(formula)
        if result is not None:
            pass
        elif isinstance(formula, And):
            result = conj(*(self.formula(a) for a in formula.args))
        elif isinstance(formula, Or):
            result = disj(*(self.formula(a) for a in formula.args))
        elif isinstance(formula, Not):
            result = neg(self.formula(formula.arg))
        elif isinstance(formula, Cmp):
            result = cmp(formula.op, self.term(formula.left), self.term(formula.right))
        else:
            result = formula
        self.memo[id(formula)] = (formula, result)
        return result


def mode_rewriter(mode: str) -> Rewriter:
    """Substitutes the forward mode under check, folding what becomes constant."""
    return Rewriter(
        formula_leaf=lambda f: BoolConst(mode in f.members) if isinstance(f, ModeIs) else None
    )


# One rewriter per mode, shared by every specialisation until `forget_specialisations`: the
# path conditions of a file share their prefixes, and a rewriter per call rebuilt them for each
# (bench/RESULTS.md, "What each change did").
_MODE_REWRITERS: dict[str, Rewriter] = {}


def _mode_rewriter(mode: str) -> Rewriter:
    found = _MODE_REWRITERS.get(mode)
    if found is None:
        found = _MODE_REWRITERS[mode] = mode_rewriter(mode)
    return found


def specialise_formula(formula: Formula, mode: str) -> Formula:
    return _mode_rewriter(mode).formula(formula)


def specialise_term(term: Term, mode: str) -> Term:
    return _mode_rewriter(mode).term(term)


def forget_specialisations() -> None:
    """Drop the shared rewriters, the `conj` and `disj` answers, and what they hold (after
    each file's analysis)."""
    _MODE_REWRITERS.clear()
    _WIDTH_REWRITERS.clear()
    _CONJ_MEMO.clear()
    _DISJ_MEMO.clear()
    _WEAKENED.clear()


def width_rewriter(width: Term) -> Rewriter:
    """Replaces `RuntimeWidth` (what the runtime publishes) by the runner's width term."""
    return Rewriter(term_leaf=lambda t: width if isinstance(t, RuntimeWidth) else None)


# One rewriter per width (interned, so told apart by identity), shared until
# `forget_specialisations` as the mode rewriters are: a file's path conditions share their
# prefixes under each runner's width, and a rewriter per call rewrote them for each obligation
# (bench/RESULTS.md, "Verdict keys kept on the nodes").
_WIDTH_REWRITERS: dict[int, tuple[Term, Rewriter]] = {}


def _width_rewriter(width: Term) -> Rewriter:
    found = _WIDTH_REWRITERS.get(id(width))
    if found is None or found[0] is not width:
        found = _WIDTH_REWRITERS[id(width)] = (width, width_rewriter(width))
    return found[1]


# `weaken_runtime_tests` answers by formula and polarity, shared until `forget_specialisations`:
# every write in place of a file's analysis weakens its path condition, and those conditions
# share their prefixes (one table per call walked them again for each write: bench/RESULTS.md,
# "The runtime tests of a write's condition weakened once per file").
_WEAKENED: dict[tuple[Formula, bool], Formula] = {}
_RUNTIME_LEAVES = (RuntimeWidth, RuntimeInt, Unknown)


def weaken_runtime_tests(formula: Formula) -> Formula:
    """`formula` with each comparison of a number the runtime supplies (a leaf `RuntimeWidth`,
    `RuntimeInt` or `Unknown`) taken as holding where the formula asks it to hold and as failing
    where it asks it to fail (by polarity): the result is implied by `formula`, and names
    nothing the runtime supplies in a comparison."""
    return _weaken(formula, True)


def _weaken(node: Formula, holds: bool) -> Formula:
    key = (node, holds)
    found = _WEAKENED.get(key)
    if found is not None:
        return found
    result: Formula
    if isinstance(node, Cmp):
        runtime = _reads_runtime(node.left) or _reads_runtime(node.right)
        result = (TRUE if holds else FALSE) if runtime else node
    elif isinstance(node, And):
        result = conj(*(_weaken(arg, holds) for arg in node.args))
    elif isinstance(node, Or):
        result = disj(*(_weaken(arg, holds) for arg in node.args))
    elif isinstance(node, Not):
        result = neg(_weaken(node.arg, not holds))
    else:
        result = node
    if len(_WEAKENED) >= MAX_MEMO:
        _WEAKENED.clear()
    _WEAKENED[key] = result
    return result


def _reads_runtime(term: Term) -> bool:
    return any(isinstance(leaf, _RUNTIME_LEAVES) for leaf in term_leaves(term))


def substitute_width(term: Term, width: Term) -> Term:
    return _width_rewriter(width).term(term)


def substitute_width_formula(formula: Formula, width: Term) -> Formula:
    return _width_rewriter(width).formula(formula)


def _walk(root: object) -> Iterator[object]:
    """Every node reachable from `root` once (terms and formulas are DAGs)."""
    seen: set[int] = set()
    stack: list[object] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, Tagged):
            stack.append(node.inner)
        elif isinstance(node, BinOp):
            stack.extend((node.left, node.right))
        elif isinstance(node, Ite):
            stack.extend((node.cond, node.then, node.other))
        elif isinstance(node, Cmp):
            stack.extend((node.left, node.right))
        elif isinstance(node, (And, Or)):
            stack.extend(node.args)
        elif isinstance(node, Not):
            stack.append(node.arg)


_LEAVES = (Const, Sym, RuntimeWidth, RuntimeInt, Unknown)


def term_leaves(term: Term) -> list[Term]:
    """Every distinct leaf of `term` (through Ite arms and conditions' terms)."""
    return [n for n in _walk(term) if isinstance(n, _LEAVES)]


def symbols_of(term: Term) -> set[str]:
    return set(_symbols(term))


def formula_symbols(formula: Formula) -> set[str]:
    return set(_symbols(formula))


_NO_SYMBOLS: frozenset[str] = frozenset()


def _symbols(root: Term | Formula) -> frozenset[str]:
    """The names of the symbols under `root`, kept on each (interned) node: the solver asks
    them of each domain constraint for each question, and of path conditions that extend
    one another, where a walk of the whole DAG each time repeated itself (bench/RESULTS.md,
    "Measurements that stood in code comments")."""
    return _kept_on_nodes(root, "_symbols", _names_of)  # type: ignore[return-value]


def _names_of(node: Term | Formula, below: list[object]) -> frozenset[str]:
    if isinstance(node, Sym):
        return frozenset((node.name,))
    return _NO_SYMBOLS.union(*below)  # type: ignore[arg-type]


def formula_atoms(formula: Formula) -> dict[str, str]:
    """key -> text of every opaque condition in `formula` (and in its terms' conditions)."""
    return {n.key: n.text for n in _walk(formula) if isinstance(n, Atom)}


def formula_atom_keys(formula: Term | Formula) -> frozenset[str]:
    """The keys of `formula_atoms` (of a term: of its conditions), kept on each (interned)
    node: asked of every obligation's path condition, which share most of their nodes
    (bench/RESULTS.md, "Verdict keys kept on the nodes")."""
    return _kept_on_nodes(formula, "_atom_keys", _atom_keys_of)  # type: ignore[return-value]


def _atom_keys_of(node: Term | Formula, below: list[object]) -> frozenset[str]:
    if isinstance(node, Atom):
        return frozenset((node.key,))
    return _NO_SYMBOLS.union(*below)  # type: ignore[arg-type]


def term_size(term: Term, limit: int = 10_000) -> int:
    """Number of nodes of the term as a tree (a shared subterm counts at each place), counted
    up to `limit` (enormous expressions stop early)."""
    return min(_tree_size(term), limit)


# A tree size is counted up to this, far above any limit asked for: the size of a DAG as a
# tree can grow exponentially with its depth.
_SIZE_CAP = 1 << 40


def _children(node: Term | Formula) -> tuple[Term | Formula, ...]:
    if isinstance(node, Tagged):
        return (node.inner,)
    if isinstance(node, (BinOp, Cmp)):
        return (node.left, node.right)
    if isinstance(node, Ite):
        return (node.cond, node.then, node.other)
    if isinstance(node, (And, Or)):
        return node.args
    if isinstance(node, Not):
        return (node.arg,)
    return ()


def _tree_size(root: Term | Formula) -> int:
    """The tree size of `root`, kept on each (interned) node it counts: the interpreter asks
    it of every arithmetic result, whose operands were counted when they were built."""
    return _kept_on_nodes(root, "_size", _size_of)  # type: ignore[return-value]


def _size_of(_node: Term | Formula, below: list[object]) -> int:
    return min(1 + sum(below), _SIZE_CAP)  # type: ignore[arg-type]


def _kept_on_nodes(
    root: Term | Formula, key: str, combine: Callable[[Term | Formula, list[object]], object]
) -> object:
    """`combine(node, values of its children)` for `root`, kept on each (interned) node under
    `key`, each node's computed once, children first (`_children`), without recursion: terms
    nest deeper than Python's stack."""
    found = root.__dict__.get(key)
    if found is not None:
        return found
    stack: list[tuple[Term | Formula, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if key in node.__dict__:
            continue
        children = _children(node)
        if ready:
            value = combine(node, [child.__dict__[key] for child in children])
            object.__setattr__(node, key, value)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if key not in child.__dict__)
    return root.__dict__[key]


def untag(term: Term) -> Term:
    """`term` without provenance: structurally equal terms written in different places
    become equal (cache keys, polynomial atoms). Kept on each (interned) node it reaches, so
    that a subterm shared by many terms, or asked again, is untagged once."""
    found = term.__dict__.get("_untagged")
    if found is not None:
        return found  # type: ignore[no-any-return]
    result: Term
    if isinstance(term, Tagged):
        result = untag(term.inner)
    elif isinstance(term, BinOp):
        result = BinOp(term.op, untag(term.left), untag(term.right))
    elif isinstance(term, Ite):
        result = Ite(untag_formula(term.cond), untag(term.then), untag(term.other))
    else:
        result = term
    object.__setattr__(term, "_untagged", result)
    return result


def untag_formula(formula: Formula) -> Formula:
    found = formula.__dict__.get("_untagged")
    if found is not None:
        return found  # type: ignore[no-any-return]
    result: Formula
    if isinstance(formula, Cmp):
        result = Cmp(formula.op, untag(formula.left), untag(formula.right))
    elif isinstance(formula, And):
        result = And(tuple(untag_formula(a) for a in formula.args))
    elif isinstance(formula, Or):
        result = Or(tuple(untag_formula(a) for a in formula.args))
    elif isinstance(formula, Not):
        result = Not(untag_formula(formula.arg))
    else:
        result = formula
    object.__setattr__(formula, "_untagged", result)
    return result


# The node classes `stable_hash` knows.
_HASHED: tuple[type, ...] = (Const, Sym, RuntimeWidth, RuntimeInt, Unknown, BinOp, Ite, Tagged)
_HASHED += (BoolConst, Cmp, And, Or, Not, ModeIs, Atom)


def stable_hash(node: object) -> str:
    """A hash of a term or formula's structure that is the same in every run (Python's own
    `hash` of strings and frozensets changes with PYTHONHASHSEED): the verdict cache's key.
    Provenance is left out. Kept on each (interned) node it reaches, so that a subterm shared by
    many obligations is hashed once per process: hashing each obligation's formulas afresh was
    a third of a pre-commit run's analysis of vLLM's AITER MLA backend (bench/RESULTS.md,
    "Verdict keys kept on the nodes")."""
    if not isinstance(node, _HASHED):
        raise TypeError(f"not a term or formula: {node!r}")
    return _kept_on_nodes(node, "_stable", _stable_of)  # type: ignore[arg-type, return-value]


def _stable_of(node: Term | Formula, below: list[object]) -> str:
    import hashlib

    parts: list[str] = below  # type: ignore[assignment]  # the children's hashes
    if isinstance(node, Tagged):
        return parts[0]
    if isinstance(node, (Const, Sym, RuntimeInt, Unknown, Atom, BoolConst)):
        text = repr(node)
    elif isinstance(node, RuntimeWidth):
        text = "RuntimeWidth"
    elif isinstance(node, ModeIs):
        text = "ModeIs" + ",".join(sorted(node.members))
    elif isinstance(node, (BinOp, Cmp)):
        text = f"{type(node).__name__}{node.op}{parts[0]}{parts[1]}"
    elif isinstance(node, (Ite, And, Or, Not)):
        text = type(node).__name__ + "".join(parts)
    else:
        raise TypeError(f"not a term or formula: {node!r}")
    return hashlib.sha256(text.encode()).hexdigest()
