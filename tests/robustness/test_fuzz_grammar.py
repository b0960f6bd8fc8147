"""Grammar-based random Python (hypothesmith) must never crash the extractor.

Each generated module is run through the interpreter three ways: as the body of a backend
entry point (after the width is read, before the index pointer is built, so the site's path
goes through it), as a helper method the entry point calls, and as a whole module next to a
backend. The scan must return (never raise), report at most per-file errors, and keep the
backend's own finding unless the generated code redefines what the site reads."""

from __future__ import annotations

import textwrap

import hypothesmith
import pytest
from hypothesis import given
from hypothesis import strategies as st

from idxcheck.app.run import scan_source
from idxcheck.model.config import Config

from .conftest import FUZZ

ENTRY = """import torch


class FuzzBackend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps
        self.ndt = model_runner.server_args.speculative_num_draft_tokens

    def _generated(self, forward_batch):
{helper}

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        self._generated(forward_batch)
        if forward_batch.forward_mode.is_target_verify():
            width = self.steps + 1
{body}
            self.qo_indptr = torch.arange(0, bs * width + 1, step=width)
"""

# hypothesmith compiles what it generates: `1()` warns.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

PROGRAMS = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())


def as_block(code: str, indent: int) -> str:
    body = textwrap.indent(code, " " * indent) if code.strip() else ""
    return body.rstrip("\n") or " " * indent + "pass"


def backend_with(code: str) -> str:
    return ENTRY.format(helper=as_block(code, 8), body=as_block(code, 12))


@FUZZ
@given(PROGRAMS)
def test_random_python_inside_a_backend_never_crashes(code: str) -> None:
    result = scan_source(backend_with(code), "fuzz_backend.py", Config())
    for error in result.errors:
        assert "internal" not in error.message.lower(), error.message
    # The generated code may rebind `width`, `bs`, `torch` or `self.steps` or leave the
    # branch (return, raise): the finding may go, but nothing may be invented.
    for finding in result.findings:
        assert finding.code in ("IDX001", "IDX002", "IDX004", "IDX006"), finding


@FUZZ
@given(PROGRAMS)
def test_random_python_module_never_crashes(code: str) -> None:
    text = code + "\n\n" + backend_with("pass")
    result = scan_source(text, "fuzz_module.py", Config())
    for error in result.errors:
        assert "internal" not in error.message.lower(), error.message


def test_the_template_itself_is_flagged() -> None:
    result = scan_source(backend_with("pass"), "fuzz_backend.py", Config())
    assert result.errors == []
    assert [(f.code, f.mode) for f in result.findings] == [("IDX001", "TARGET_VERIFY")]
