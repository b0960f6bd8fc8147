"""The generated part of the bad-input corpus (the hand-written part is fixtures/bad/).

Each builder writes one bad input under a folder and returns its path; large or special
files (5 MB, 10,000 sites, symbolic-link loops, FIFOs, unreadable files) are made here, in a
test's temporary folder, never committed."""

from __future__ import annotations

import os
from pathlib import Path

from ..conftest import FIXTURES

BUG = FIXTURES / "bugs" / "eagle_partial_fix.py"  # one IDX002 finding, line 25
FORWARD_MODE = FIXTURES / "runtime" / "forward_mode.py"

BACKEND_HEAD = """import torch


class GeneratedBackend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
"""


def big_file(folder: Path, megabytes: float = 5.0) -> Path:
    """A 5 MB module: a real backend (one finding) followed by a large generated table and
    many helper functions without sites."""
    path = folder / "big_5mb.py"
    parts = [BUG.read_text(), "\n\nTABLE = [\n"]
    size = sum(len(p) for p in parts)
    i = 0
    while size < megabytes * 1_000_000 * 0.8:
        row = f"    ({i}, {i * 7 % 1013}, 'entry_{i}', {i * 0.5}),\n"
        parts.append(row)
        size += len(row)
        i += 1
    parts.append("]\n")
    j = 0
    while size < megabytes * 1_000_000:
        fn = f"\n\ndef helper_{j}(x, y):\n    total = x + y * {j}\n    return [total, x - {j}, y // 2]\n"
        parts.append(fn)
        size += len(fn)
        j += 1
    path.write_text("".join(parts))
    return path


def _deep(shape: str, d: int) -> str:
    # libcst's native parser crashed the process (SIGSEGV) on brackets, lambdas and `and`
    # chains this deep; the others stalled the interpreter or its code generation.
    if shape == "parens":
        return "(" * d + "self.ndt" + ")" * d
    if shape == "sum":
        return "self.ndt" + " + 0" * d
    if shape == "lambda":
        return "lambda: " * d + "self.ndt"
    if shape == "unary":
        return "-" * d + "self.ndt"
    return " and ".join(["self.ndt"] * (2 * d))


DEEP_SHAPES = ("and", "lambda", "parens", "sum", "unary")


def deep_expression(folder: Path, shape: str, depth: int = 5000) -> Path:
    path = folder / f"deep_{shape}.py"
    expr = _deep(shape, depth)
    path.write_text(
        BACKEND_HEAD
        + "\n    def init_forward_metadata(self, forward_batch):\n"
        + "        bs = forward_batch.batch_size\n"
        + f"        n = {expr}\n"
        + "        self.qo_indptr = torch.arange(0, bs * n + 1, step=n)\n"
    )
    return path


def many_sites(folder: Path, count: int = 10_000) -> tuple[Path, set[tuple[int, str]]]:
    """`count` sites in one class (100 methods of 100 sites), of which a known few are wrong:
    returns the path and the expected (line, code) findings."""
    path = folder / "sites_10k.py"
    lines = BACKEND_HEAD.rstrip("\n").split("\n")
    expected: set[tuple[int, str]] = set()
    per_method = 100
    for m in range(count // per_method):
        lines += [
            "",
            f"    def init_forward_metadata_{m}(self, forward_batch):",
            "        bs = forward_batch.batch_size",
            "        if forward_batch.forward_mode.is_target_verify():",
        ]
        for j in range(per_method):
            wrong = m % 10 == 3 and j == 7
            width = "(self.steps + 1)" if wrong else "self.ndt"
            if j == 0 or (wrong and m % 20 == 3):
                lines.append(
                    f"            self.qo_indptr = torch.arange(0, bs * {width} + 1, step={width})"
                )
                code = "IDX001"
            else:
                lines.append(f"            self.max_extend_len = {width}")
                code = "IDX002"
            if wrong:
                expected.add((len(lines), code))
    path.write_text("\n".join(lines) + "\n")
    return path, expected


def symlink_loop(folder: Path) -> Path:
    """A folder holding two `.py` links that point at each other, and a link to its parent
    (a folder that holds only it)."""
    loop = folder / "symlink_root" / "symlink_loop"
    loop.mkdir(parents=True)
    os.symlink("b.py", loop / "a.py")
    os.symlink("a.py", loop / "b.py")
    os.symlink("..", loop / "parent")
    return loop


def unreadable(folder: Path) -> tuple[Path, str]:
    """A `.py` file that cannot be read, and the message expected for it. Not as root, a
    `chmod 000` file; root reads any file whatever its mode, so there it is a link to
    `/proc/self/mem`, whose first page is never mapped: reading it fails with EIO."""
    path = folder / "unreadable.py"
    if os.geteuid() != 0:
        path.write_text("qo_indptr = None\n")
        path.chmod(0)
        return path, "cannot read: Permission denied"
    os.symlink("/proc/self/mem", path)
    return path, "cannot read: Input/output error"


def chmod_000(folder: Path) -> Path:
    """A backend with a finding, made mode 000: unreadable unless the scan runs as root."""
    sub = folder / "mode000"
    sub.mkdir()
    path = sub / "eagle_partial_fix.py"
    path.write_text(BUG.read_text())
    path.chmod(0)
    return path


def fifo(folder: Path) -> Path:
    """A FIFO named like a Python file, alone in its folder."""
    sub = folder / "fifo"
    sub.mkdir()
    path = sub / "pipe.py"
    os.mkfifo(path)
    return path


def dir_named_like_a_file(folder: Path) -> Path:
    """A directory called `backend.py` holding a real backend: walked, not read as a file."""
    path = folder / "backend.py"
    path.mkdir()
    (path / "inner.py").write_text(BUG.read_text())
    return path


# Predicates that recurse, mutually and into themselves: each cycle is one error, and the
# standard predicates of the enum are still read.
RECURSIVE_PREDICATES = """
    def is_speculative(self):
        return self.is_verify_like() or self.is_draft_extend(include_v2=True)

    def is_verify_like(self):
        return self.is_speculative() and not self.is_draft_extend()

    def is_forever(self, deep: bool = False):
        return self.is_forever(deep=not deep)
"""


def recursive_enum(folder: Path) -> Path:
    """The fixtures' ForwardMode with predicates that recurse."""
    path = folder / "recursive_predicate" / "forward_mode.py"
    path.parent.mkdir()
    path.write_text(FORWARD_MODE.read_text() + RECURSIVE_PREDICATES)
    return path


def big_enum(folder: Path, members: int = 300) -> Path:
    """The fixtures' ForwardMode with extra members up to `members` in all."""
    path = folder / "enum_300" / "forward_mode.py"
    path.parent.mkdir()
    text = FORWARD_MODE.read_text()
    extra = "".join(f"    EXTRA_MODE_{i:03d} = auto()\n" for i in range(members - 8))
    anchor = "    DLLM_EXTEND = auto()\n"
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + extra))
    return path
