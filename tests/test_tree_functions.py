"""Functions of the scanned tree followed where called (`interp.functions`,
`source.modules.FunctionIndex`): module-level functions of the same file and functions imported
from other files, by name, as a module or through a package's re-export; recursion and calls
nested past the bound are UNSUPPORTED with their reason; a wrapper's sinks and a call of one of
several functions do not count a site again."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.interp.functions import MAX_FUNCTION_DEPTH
from idxcheck.model.config import Config
from idxcheck.source.files import SourceFile
from idxcheck.source.modules import FunctionIndex, absolute_module, file_imports

BACKEND = """
class RowsBackend:
    def __init__(self, model_runner):
        self.drafts = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_draft_extend_v2():
            self.forward_metadata = Rows(max_seqlen_q={call})
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _scan(root: Path) -> tuple[set[tuple[str, int, str]], list[str], int]:
    result = scan([str(root)], Config())
    assert result.errors == []
    found = {(Path(f.span.path).name, f.span.line, f.code) for f in result.findings}
    return found, [n.reason for n in result.notes], result.stats.obligations


def test_recursion_and_depth_are_unsupported_with_their_reason(tmp_path: Path) -> None:
    chain = "".join(
        f"def level{i}(n):\n    return level{i + 1}(n)\n\n\n" for i in range(MAX_FUNCTION_DEPTH)
    )
    helpers = (
        "def ping(n):\n    return pong(n - 1)\n\n\ndef pong(n):\n    return ping(n)\n\n\n"
        + chain
        + f"def level{MAX_FUNCTION_DEPTH}(n):\n    return n\n"
    )
    _write(tmp_path, {"a.py": helpers + BACKEND.format(call="ping(self.steps) + level0(0)")})
    _, reasons, _ = _scan(tmp_path)
    assert "recursive call to `ping` (ping -> pong -> ping) is not followed" in reasons, reasons
    _write(tmp_path, {"a.py": helpers + BACKEND.format(call="level0(self.steps + 1)")})
    _, reasons, _ = _scan(tmp_path)
    assert reasons == [
        f"call to `level{MAX_FUNCTION_DEPTH}` nested in more than {MAX_FUNCTION_DEPTH} "
        "functions of the scanned tree is not followed"
    ]
    # One level less is followed: the chain's width is the wrong one, and found.
    shorter = helpers.replace(
        f"def level{MAX_FUNCTION_DEPTH - 1}(n):\n    return level{MAX_FUNCTION_DEPTH}(n)",
        f"def level{MAX_FUNCTION_DEPTH - 1}(n):\n    return n",
    )
    _write(tmp_path, {"a.py": shorter + BACKEND.format(call="level0(self.steps + 1)")})
    found, reasons, _ = _scan(tmp_path)
    assert reasons == [] and {code for _, _, code in found} == {"IDX002"}


def test_imports_resolve_by_relative_name_module_alias_and_reexport(tmp_path: Path) -> None:
    width = "def chain_rows(steps):\n    return steps + 1  # max_seqlen_q\n"
    for imports, call in (
        ("from .rows import chain_rows", "chain_rows(self.steps)"),
        ("from pkg.rows import chain_rows", "chain_rows(self.steps)"),
        ("from . import rows", "rows.chain_rows(self.steps)"),
        ("import pkg.rows as r", "r.chain_rows(self.steps)"),
        ("import pkg.rows", "pkg.rows.chain_rows(self.steps)"),
        # A package's `__init__.py` that re-exports the function.
        ("from pkg import chain_rows", "chain_rows(self.steps)"),
    ):
        root = tmp_path / str(abs(hash(imports)))
        _write(
            root,
            {
                "pkg/rows.py": width,
                "pkg/__init__.py": "from .rows import chain_rows  # max_seqlen_q\n",
                "pkg/backend.py": imports + "\n" + BACKEND.format(call=call),
            },
        )
        found, reasons, _ = _scan(root)
        # The width is computed in the helper: the finding points at its return expression.
        assert found == {("rows.py", 2, "IDX002")}, (imports, found, reasons)
        assert reasons == []


def test_an_import_the_tree_cannot_resolve_says_why(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "backend.py": "from .gone import chain_rows\n"
            + BACKEND.format(call="chain_rows(self.steps)"),
            # Two files that `import rows` may name.
            "x/rows.py": "def chain_rows(s):\n    return s  # max_seqlen_q\n",
            "y/rows.py": "def chain_rows(s):\n    return s  # max_seqlen_q\n",
            "other.py": "import rows\n" + BACKEND.format(call="rows.chain_rows(self.steps)"),
        },
    )
    found, reasons, _ = _scan(tmp_path)
    assert found == set()
    assert sorted(reasons) == sorted(
        [
            "call to `chain_rows`: `chain_rows` is imported from `.gone`, which is not a file "
            "among those idxcheck reads",
            "call to `rows.chain_rows`: `rows` is imported from `rows`, which more than one "
            "scanned file may be",
        ]
    ), reasons


def test_file_imports_and_module_names_are_read_from_the_text() -> None:
    source = SourceFile(
        "src/pkg/sub/mod.py",
        "from .a import f as g\nfrom ..b import (\n    h,\n    k,\n)\nimport c.d as e\n"
        "import x.y\nif True:\n    from z import w\n",
    )
    found = file_imports(source)
    assert {k: (v.module, v.name) for k, v in found.items()} == {
        "g": (".a", "f"),
        "h": ("..b", "h"),
        "k": ("..b", "k"),
        "e": ("c.d", None),
        "x": ("x", None),
    }
    assert absolute_module("..b", source) == ("src", "pkg", "b")
    assert absolute_module(".....b", source) is None
    index = FunctionIndex([source])
    assert index.lookup("torch.arange", source) is None  # not a module of the tree
    assert index.lookup("undefined", source) is None


def test_a_wrapper_and_a_choice_of_functions_count_a_site_once(tmp_path: Path) -> None:
    """A module-level kernel wrapper that hands its keywords on to two sinks, and a call of
    whichever function a resolver returns, make the obligations of one direct call."""
    direct = BACKEND.format(call="self.drafts")
    _write(tmp_path / "direct", {"a.py": direct})
    _, _, alone = _scan(tmp_path / "direct")
    wrapper = (
        "def launch(q, max_seqlen_q=None):\n"
        "    plan(max_seqlen_q=max_seqlen_q)\n"
        "    return run(q, max_seqlen_q=max_seqlen_q)\n\n\n"
        "def pick(flag):\n"
        "    if flag:\n"
        "        from kernels_a import run_a\n"
        "        return run_a\n"
        "    from kernels_b import run_b\n"
        "    return run_b\n"
    )
    body = wrapper + BACKEND.format(call="self.drafts").replace(
        "self.forward_metadata = Rows(max_seqlen_q=self.drafts)",
        "launch(0, max_seqlen_q=self.drafts)\n"
        "            pick(forward_batch.flag)(max_seqlen_q=self.drafts)",
    )
    _write(tmp_path / "wrapped", {"a.py": body})
    found, reasons, wrapped = _scan(tmp_path / "wrapped")
    assert found == set() and reasons == []
    assert wrapped == 2 * alone  # the two calls, each once


def test_a_finding_in_a_shared_helper_names_the_call_that_reached_it() -> None:
    """The helper's return expression is the place to fix (the width is computed there, for
    every caller); the call of the backend that reached it is a related location."""
    result = scan(["fixtures/bugs/split_pass"], Config())
    finding = next(f for f in result.findings if f.code == "IDX002" and f.mode == "DRAFT_EXTEND_V2")
    assert (Path(finding.span.path).name, finding.span.line) == ("pass_layout.py", 20)
    calls = [r for r in finding.related if r.role == "call"]
    assert [(Path(r.file).name, r.span.line if r.span else 0) for r in calls] == [
        ("backend.py", 19)
    ]
    assert calls[0].message.startswith("the value comes out of the call `pass_layout(count,")
