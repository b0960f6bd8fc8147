"""`term_size` counts a term as a tree (a shared subterm at each place it occurs), up to a
limit, from sizes kept on the interned nodes: the same count as walking the tree. The symbols
of a formula, also kept on its nodes, are those a walk of it finds."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest

from idxcheck.sym.terms import (
    And,
    Atom,
    BinOp,
    Cmp,
    Const,
    Formula,
    Ite,
    Not,
    Sym,
    Tagged,
    Term,
    formula_symbols,
    symbols_of,
    term_size,
)


def tree(root: Term | Formula) -> Iterator[object]:
    """Every node of `root` as a tree: a shared subterm at each place it occurs."""
    stack: list[object] = [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Tagged):
            stack.append(node.inner)
        elif isinstance(node, (BinOp, Cmp)):
            stack.extend((node.left, node.right))
        elif isinstance(node, Ite):
            stack.extend((node.cond, node.then, node.other))
        elif isinstance(node, And):
            stack.extend(node.args)
        elif isinstance(node, Not):
            stack.append(node.arg)


def walked(term: Term, limit: int) -> int:
    return sum(1 for _ in itertools.islice(tree(term), limit))


def walked_symbols(root: Term | Formula) -> set[str]:
    return {node.name for node in tree(root) if isinstance(node, Sym)}


@pytest.mark.parametrize("seed", range(3))
def test_the_kept_sizes_count_the_tree(seed: int) -> None:
    rng = random.Random(seed)
    pool: list[Term] = [Sym("bs"), Sym("topk"), Const(1), Const(2)]
    pool += [Sym(f"s{seed}_{i}") for i in range(3)]  # not yet seen by any other test
    for _ in range(400):
        left, right = rng.choice(pool), rng.choice(pool)
        kind = rng.randrange(4)
        made: Term
        if kind == 0:
            made = BinOp(rng.choice("+-*"), left, right)
        elif kind == 1:
            made = Ite(Cmp("<", left, right), left, right)
        elif kind == 2:
            cond = And((Cmp(">=", left, Const(0)), Not(Atom("graph", "in a CUDA graph"))))
            made = Ite(cond, right, left)
        else:
            made = Tagged(BinOp("+", left, right), None)  # type: ignore[arg-type]
        pool.append(made)
        for limit in (7, 4_001, 10_000):
            assert term_size(made, limit) == walked(made, limit)
        assert symbols_of(made) == walked_symbols(made)
        claim = Cmp("<", made, Sym(f"n{rng.randrange(3)}"))
        assert formula_symbols(claim) == walked_symbols(claim)


def test_a_shared_subterm_counts_at_each_place() -> None:
    bs = Sym("bs")
    twice = BinOp("+", bs, bs)  # 3 nodes
    square = BinOp("*", twice, twice)  # 7 as a tree, 4 as a DAG
    outer = BinOp("-", square, square)  # 15 as a tree
    assert [term_size(t) for t in (twice, square, outer)] == [3, 7, 15]
    assert term_size(outer, 10) == 10
