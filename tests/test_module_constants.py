"""Module-level integer constants (`idxcheck.source.modules.module_constants`): a name bound once
at the start of a line to an integer literal (`MAX_QUERY_LEN = 8192`) and rebound nowhere in the
file is that integer wherever the file's functions read it; any other binding of the name, at
any depth, leaves it unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.source.files import SourceFile
from idxcheck.source.modules import module_constant, module_constants


def constants(text: str) -> dict[str, int]:
    return module_constants(SourceFile.from_bytes("m.py", text.encode()))


def test_literals_shifts_and_products_are_read() -> None:
    text = "WIDTH = 8\nLIMIT: int = 1 << 4\nROWS = 2 * 3 * 4\nBIG = 1_000\nname = 3\n"
    assert constants(text) == {"WIDTH": 8, "LIMIT": 16, "ROWS": 24, "BIG": 1000}
    # A name that is not a constant's, a float, a string, a huge shift: none.
    assert constants("X = 1.5\nY = 'a'\nZ = 1 << 999\nW = -3\n") == {}
    # Text that is not Python has none.
    assert constants("WIDTH = 8\ndef (:\n") == {}


@pytest.mark.parametrize(
    "rebinding",
    [
        "if flag:\n    WIDTH = 9\n",
        "for WIDTH in range(3):\n    pass\n",
        "def f(WIDTH=3):\n    pass\n",
        "WIDTH += 1\n",
        "A, WIDTH = 1, 2\n",
        "def f():\n    global WIDTH\n    WIDTH = 3\n",
        "from m import WIDTH\n",
        "import m as WIDTH\n",
        "with open(p) as WIDTH:\n    pass\n",
        "from m import *\n",
        "WIDTH = 9\n",
        "WIDTH = compute()\n",
        "(A, WIDTH) = 1, 2\n",
        "[A, WIDTH] = 1, 2\n",
        "def f(\n    a,\n    WIDTH,\n):\n    pass\n",
        "match x:\n    case [WIDTH]:\n        pass\n",
        "try:\n    pass\nexcept E as WIDTH:\n    pass\n",
        "del WIDTH\n",
    ],
)
def test_any_other_binding_leaves_the_name_unknown(rebinding: str) -> None:
    assert "WIDTH" not in constants("WIDTH = 8\n" + rebinding)


def test_a_statement_after_a_semicolon_makes_no_constant() -> None:
    assert constants("a = 1; LIMIT = 5\nWIDTH = 8\n") == {"WIDTH": 8}


def test_a_name_no_line_assigns_is_answered_without_reading_the_file() -> None:
    source = SourceFile.from_bytes("m.py", b"WIDTH = 8\nimport torch\n")
    assert module_constant(source, "torch") is None
    assert module_constant(source, "ROWS") is None
    assert "constants" not in source.readings  # the file was not parsed for them
    assert module_constant(source, "WIDTH") == 8
    assert "constants" in source.readings
    # A line that assigns the name but is no constant's: the file is read, and says no.
    rebound = SourceFile.from_bytes("m.py", b"WIDTH = 8\nWIDTH = 9\n")
    assert module_constant(rebound, "WIDTH") is None


def test_comparisons_are_no_binding() -> None:
    assert constants("WIDTH = 8\na = WIDTH == 3\nb = WIDTH <= 3\nc = WIDTH != 3\n") == {"WIDTH": 8}


BACKEND = """\
import torch

ROWS_PER_REQUEST = ROWS


class FixedRowsBackend:
    def __init__(self, model_runner):
        self.device = model_runner.device

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            self.forward_metadata = dict(
                qo_indptr=torch.arange(0, (bs + 1) * ROWS_PER_REQUEST, ROWS_PER_REQUEST),
            )
"""


def test_a_constant_stride_is_compared_with_the_runtime(tmp_path: Path) -> None:
    # A fixed stride of 4 rows per request against a verify step of num_draft_tokens rows:
    # a finding, with the constant's value in it.
    path = tmp_path / "fixed_rows_backend.py"
    path.write_text(BACKEND.replace("= ROWS", "= 4"))
    result = scan([str(path)], Config())
    assert result.errors == []
    assert {(f.code, f.mode) for f in result.findings} == {("IDX001", "TARGET_VERIFY")}
    # Rebound elsewhere in the file, the constant is not known: UNSUPPORTED, not guessed.
    path.write_text(BACKEND.replace("= ROWS", "= 4") + "\nROWS_PER_REQUEST = 5\n")
    result = scan([str(path)], Config())
    assert result.findings == []
    assert any("ROWS_PER_REQUEST" in n.reason for n in result.notes)
