"""Kernel-aware severity: whether a refuted grid scalar drops rows at a real block size of the
launcher whose grid it sizes, or is latent there."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from idxcheck.check.obligations import Obligation
from idxcheck.facts.kernels import BlockRow, Launcher, block_rows, drops_rows
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import Profile
from idxcheck.solve.types import SolveResult
from idxcheck.sym.evaluate import Assignment, eval_formula
from idxcheck.sym.simplify import simplify
from idxcheck.sym.terms import Formula, formula_symbols, specialise_term, substitute_width

# A decision of the checker: the verdict of (assumptions, violation).
Check = Callable[[Formula, Formula], SolveResult]


@dataclass(frozen=True)
class KernelVerdict:
    launcher: Launcher
    row: BlockRow | None  # the row whose BLOCK_M drops rows, with `model` its counterexample
    model: dict[str, int]
    latent_rows: tuple[BlockRow, ...]  # rows under which no configuration drops rows
    head_dim: int | None
    biting: tuple[int, ...] = ()  # when latent: BLOCK_M values of the table that would drop rows


def kernel_verdict(
    ob: Obligation,
    launcher_name: str,
    launchers: Mapping[str, Launcher],
    profile: Profile,
    check: Check,
) -> KernelVerdict | None:
    """For a refuted grid obligation whose scalar reaches a launcher of the scanned tree:
    does some real BLOCK_M of its table drop rows in the domain?"""
    launcher = launchers.get(launcher_name)
    if launcher is None or ob.binding.loc.span.path not in launcher.callers:
        return None
    scalar = simplify(substitute_width(specialise_term(ob.claim.subject, ob.mode), ob.runner.term))
    width = ob.runner.term
    rows = block_rows(profile, launcher_name)
    best: tuple[tuple[int, list[int]], BlockRow, dict[str, int], int] | None = None
    latent: list[BlockRow] = []
    order = profile.symbol_order()
    arches = list(dict.fromkeys(r.arch for r in rows))
    for row in rows:
        dims = _head_dims(row, profile)
        if not dims:
            continue
        result = check(ob.assumptions, drops_rows(scalar, width, row.block_m))
        if result.verdict != Verdict.REFUTED:
            latent.append(row)
            continue
        # The first arch of the table (the one the runtime companion replays on) first, then
        # the smallest counterexample.
        rank = (
            arches.index(row.arch),
            [result.model.get(name, 0) for name in order if name in result.model],
        )
        if best is None or rank < best[0]:
            best = (rank, row, dict(result.model), max(dims))
    if best is None:
        # Latent here: name the block sizes of the table under which it would bite.
        biting = sorted(
            {
                r.block_m
                for r in rows
                if check(ob.assumptions, drops_rows(scalar, width, r.block_m)).verdict
                == Verdict.REFUTED
            }
        )
        return KernelVerdict(launcher, None, {}, tuple(latent), None, tuple(biting))
    return KernelVerdict(launcher, best[1], best[2], tuple(latent), best[3])


def _head_dims(row: BlockRow, profile: Profile) -> list[int]:
    """The head dimensions of the row that the profile's kernel constraints admit."""
    kernel_constraints = [
        c.formula
        for c in profile.domain
        if formula_symbols(c.formula) <= {"head_dim", "sm", "block_m"}
    ]
    return [
        d
        for d in row.head_dims(profile.head_dims)
        if all(
            eval_formula(c, Assignment(ints={"head_dim": d, "sm": row.sm, "block_m": row.block_m}))
            for c in kernel_constraints
        )
    ]
