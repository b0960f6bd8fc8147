"""Kernel-aware severity of grid findings.

A grid scalar that is smaller than the runtime width drops query rows only when the kernel's
grid, `cdiv(scalar, BLOCK_M)` blocks of `BLOCK_M` rows, stops short of the request's tokens. So
for a refuted grid obligation, find the Triton launcher the scalar reaches in the scanned tree
(a function whose grid is `triton.cdiv(<param>, BLOCK_M)`), and ask the solver, for each row of
the launcher's block-size table (arch, head dims, BLOCK_M), whether some configuration drops
rows. If one does, the finding is an error with that row in its counterexample; if none does, it
is a latent warning that names the block sizes under which it would bite."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from idxcheck.model.spans import Span
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import SourceFile
from idxcheck.sym.terms import Const, Formula, Term, binop, cdiv, cmp


@dataclass(frozen=True)
class Launcher:
    name: str
    param: str
    span: Span
    callers: frozenset[str] = frozenset()  # files that call it: where its grid scalars come from


@dataclass(frozen=True)
class BlockRow:
    arch: str
    head_lo: int
    head_hi: int
    block_m: int

    @property
    def sm(self) -> int:
        """The arch as a number for domain constraints (`sm == 90`); ROCm is 0."""
        return int(self.arch[2:]) if self.arch.startswith("sm") else 0

    def head_dims(self, head_dims: tuple[int, ...]) -> list[int]:
        return [d for d in head_dims if self.head_lo <= d <= self.head_hi]


def find_launchers(files: Iterable[SourceFile], profile: Profile) -> dict[str, Launcher]:
    """Launchers of the profile's kernels defined in the scanned files, by kernel name."""
    wanted = {kernel: param for kernel, param in profile.kernel_grids.values()}
    found: dict[str, Launcher] = {}
    for source in files:
        for kernel, param in wanted.items():
            if kernel in found or f"def {kernel}" not in source.text:
                continue
            for block in source.blocks_named(kernel):
                body = source.block_text(block, decorators=False)
                grid = re.search(
                    rf"grid\s*=\s*\([^)]*cdiv\(\s*{re.escape(param)}\s*,\s*BLOCK_M\s*\)", body
                )
                if grid:
                    line = block.header_line + body.count("\n", 0, grid.start())
                    found[kernel] = Launcher(kernel, param, Span(source.path, line, 0, line, 0))
    callers: dict[str, set[str]] = {kernel: set() for kernel in found}
    for kernel in found:
        # The call as a pattern that starts with the name (searched for at memchr speed); what
        # precedes it (a word boundary, no `def `) is checked per match.
        call = re.compile(rf"{re.escape(kernel)}\s*\(")
        for source in files:
            if kernel in source.text and _calls(call, source.text):
                callers[kernel].add(source.path)
    return {
        kernel: Launcher(launcher.name, launcher.param, launcher.span, frozenset(callers[kernel]))
        for kernel, launcher in found.items()
    }


_WORD_CHAR = re.compile(r"\w")


def _calls(call: re.Pattern[str], text: str) -> bool:
    r"""Whether `call` (a name and its opening bracket) occurs after a word boundary and not
    after `def `: what `(?<!def )\bNAME\s*\(` finds."""
    for match in call.finditer(text):
        start = match.start()
        if start and _WORD_CHAR.match(text, start - 1):
            continue
        if text.endswith("def ", 0, start):
            continue
        return True
    return False


def launchers_signature(launchers: dict[str, Launcher]) -> str:
    """The launchers as a stable string (sets sorted): part of what a cached file analysis is
    keyed by."""
    return repr(
        sorted(
            (key, found.name, found.param, found.span.path, found.span.line, sorted(found.callers))
            for key, found in launchers.items()
        )
    )


def block_rows(profile: Profile, kernel: str) -> list[BlockRow]:
    return [BlockRow(*row) for row in profile.kernel_block_m.get(kernel, ())]


def drops_rows(scalar: Term, width: Term, block_m: int) -> Formula:
    """The grid of `cdiv(scalar, block_m)` blocks covers fewer rows than `width`."""
    covered = binop("*", cdiv(scalar, Const(block_m)), Const(block_m))
    return cmp("<", covered, width)
