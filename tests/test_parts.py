"""Each file's cached analysis (`idxcheck.incremental.parts`): a comment edit is answered from the cache, a
code edit analyses that file again and no other, and a file whose class inherits from an
edited file's class is analysed again too. Every scan gives what an uncached scan gives."""

from __future__ import annotations

import io
import shutil
import tokenize
from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.incremental import parts
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict
from idxcheck.source.files import SourceFile, strip_comments

from .realtree import sglang_tree

FIXTURES = Path("fixtures")
BACKEND = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
STRIDE = "per_req = self.speculative_num_steps + 1"
FIXED = "per_req = self.num_draft_tokens"


def _json(paths: list[Path], cache_dir: Path | None, jobs: int = 1) -> dict[str, object]:
    config = Config(cache_dir=str(cache_dir) if cache_dir else None, jobs=jobs)
    doc = to_dict(scan([str(p) for p in paths], config))
    doc.pop("stats", None)  # seconds differ run to run
    return doc


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the files analysed (not answered from the cache), in order."""
    seen: list[str] = []
    original = parts.analyse_file

    def counting(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(Path(source.path).name)
        return original(source, *args, **kwargs)

    monkeypatch.setattr(parts, "analyse_file", counting)
    return seen


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", tree)
    return tree


def test_comment_edits_are_answered_from_the_cache(tmp_path: Path, analysed: list[str]) -> None:
    tree = _tree(tmp_path)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    assert "eagle_draft_extend_v2.py" in analysed
    analysed.clear()
    target = tree / BACKEND.name
    text = target.read_text()
    assert STRIDE in text, "the fixture's stride moved: update this test"
    # Comments at the ends of lines inside methods (with a call, an item write and an attribute
    # write in them, which the method-body searches would otherwise see), and a comment line
    # appended at the end of the file. (A comment line inserted above code moves that code:
    # a new analysis, with the new line numbers.)
    edited = text.replace(STRIDE, STRIDE + "  # see self.helper(x) and a[0] = 1", 1)
    edited = edited.replace(
        "return qo_indptr, kv_indptr\n", "return qo_indptr, kv_indptr  # self.x = 2\n", 1
    )
    assert edited.count("#") == text.count("#") + 2
    target.write_text(edited + "# a last comment\n")
    warm = _json([tree], cache_dir)
    assert analysed == []
    assert warm == _json([tree], None)
    assert warm["findings"]


def test_code_edit_analyses_that_file_only(tmp_path: Path, analysed: list[str]) -> None:
    tree = _tree(tmp_path)
    cache_dir = tmp_path / "cache"
    before = _json([tree], cache_dir)
    analysed.clear()
    target = tree / BACKEND.name
    target.write_text(target.read_text().replace(STRIDE, FIXED, 1))
    after = _json([tree], cache_dir)
    assert analysed == [BACKEND.name]
    assert after == _json([tree], None)
    assert after != before


def test_unchanged_files_are_served_without_their_hit_lines(
    tmp_path: Path, analysed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose text did not change is found by its text's key: neither its comments are
    stripped nor its hit lines found (a tokenizer pass per file, most of a rescan's time)."""
    tree = _tree(tmp_path)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    _json([tree], cache_dir)  # the second scan is answered whole: no file is looked at
    stripped: list[str] = []
    original = SourceFile.code_text

    def counting(self: SourceFile) -> str:
        stripped.append(Path(self.path).name)
        return original(self)

    monkeypatch.setattr(SourceFile, "code_text", counting)
    target = tree / BACKEND.name
    target.write_text(target.read_text().replace(STRIDE, FIXED, 1))
    analysed.clear()
    after = _json([tree], cache_dir)
    assert analysed == [BACKEND.name]
    assert set(stripped) == {BACKEND.name}, stripped
    assert after == _json([tree], None)


def _base_and_subclass(tmp_path: Path) -> Path:
    """A backend in `base.py` and a class in `sub.py` that inherits its methods."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "base.py").write_text(BACKEND.read_text())
    (tree / "sub.py").write_text(
        "from base import DraftExtendBackend\n\n\n"
        "class SubBackend(DraftExtendBackend):\n"
        "    def forward_extend(self, q, k, v, layer, forward_batch):\n"
        "        return self.forward_metadata.qo_indptr\n"
    )
    return tree


def test_edited_base_class_reanalyses_its_subclass(tmp_path: Path, analysed: list[str]) -> None:
    tree = _base_and_subclass(tmp_path)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    assert sorted(analysed) == ["base.py", "sub.py"]
    analysed.clear()
    base = tree / "base.py"
    base.write_text(base.read_text().replace(STRIDE, FIXED, 1))
    after = _json([tree], cache_dir)
    assert sorted(analysed) == ["base.py", "sub.py"]
    assert after == _json([tree], None)
    analysed.clear()
    # A comment in the base keeps both parts.
    base.write_text(base.read_text() + "# noted\n")
    assert _json([tree], cache_dir) == after
    assert analysed == []


def test_new_class_of_a_looked_up_name_reanalyses(tmp_path: Path, analysed: list[str]) -> None:
    """A second class of the base's name makes the lookup ambiguous: the part that looked it
    up is analysed again, not served."""
    tree = _base_and_subclass(tmp_path)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    analysed.clear()
    (tree / "other.py").write_text(
        "class DraftExtendBackend:\n    def indptr(self):\n        return self.qo_indptr\n"
    )
    after = _json([tree], cache_dir)
    assert "sub.py" in analysed
    assert after == _json([tree], None)


def _with_modes(tmp_path: Path) -> Path:
    """The bugs fixtures with the forward-mode enum that the tree facts are read from."""
    tree = _tree(tmp_path)
    shutil.copy(FIXTURES / "runtime" / "forward_mode.py", tree / "forward_mode.py")
    return tree


def test_edit_of_a_facts_file_that_keeps_the_facts_reanalyses_no_other_file(
    tmp_path: Path, analysed: list[str]
) -> None:
    """The enum's file is read whole for the tree facts; a code edit there that leaves the
    mode model as it was leaves every other file's analysis valid (the analyses depend on
    the facts' value, not on the text they came from)."""
    tree = _with_modes(tmp_path)
    cache_dir = tmp_path / "cache"
    before = _json([tree], cache_dir)
    assert BACKEND.name in analysed
    analysed.clear()
    enum = tree / "forward_mode.py"
    enum.write_text(enum.read_text() + "\n\ndef describe(mode):\n    return mode.name\n")
    after = _json([tree], cache_dir)
    assert analysed == ["forward_mode.py"]  # the edited file itself, and no other
    assert after == before == _json([tree], None)


def test_edit_that_changes_the_facts_reanalyses_every_file(
    tmp_path: Path, analysed: list[str]
) -> None:
    tree = _with_modes(tmp_path)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    everything = sorted(analysed)
    analysed.clear()
    enum = tree / "forward_mode.py"
    # DRAFT_EXTEND_V2 leaves `is_extend`'s default: every predicate's value changes with it.
    text = enum.read_text()
    changed = text.replace(
        "            or (include_draft_extend_v2 and self == ForwardMode.DRAFT_EXTEND_V2)\n", "", 1
    )
    assert changed != text, "the enum fixture moved: update this test"
    enum.write_text(changed)
    after = _json([tree], cache_dir)
    assert sorted(analysed) == everything
    assert after == _json([tree], None)


def _tokens(text: str) -> list[tuple[int, str, tuple[int, int]]]:
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
    return [
        (t.type, t.string, t.start)
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type not in skip
    ]


TRICKY = '''a = "#not"  # comment
b = 'it\\'s # no'  # yes
c = """
# inside a string
"""  # after
d = f"{x:#x}"  # format spec
e = r"\\\\"  # raw
'''


@pytest.mark.parametrize(
    "path", sorted(p for p in FIXTURES.rglob("*.py") if "bad" not in p.parts), ids=str
)
def test_strip_comments_keeps_every_token_in_place(path: Path) -> None:
    text = path.read_text()
    stripped = strip_comments(text)
    assert _tokens(stripped) == _tokens(text)
    assert not any(
        t.type == tokenize.COMMENT for t in tokenize.generate_tokens(io.StringIO(stripped).readline)
    )


def test_strip_comments_on_strings_that_hold_hashes() -> None:
    stripped = strip_comments(TRICKY)
    assert _tokens(stripped) == _tokens(TRICKY)
    assert "# comment" not in stripped and "#not" in stripped and "# inside a string" in stripped
    assert stripped.count("\n") == TRICKY.count("\n")


@pytest.mark.network
def test_release_rescan_after_a_method_edit(tmp_path: Path, analysed: list[str]) -> None:
    """On a whole release: after one backend's method is renamed, a cached scan analyses that
    file and the file whose class inherits from it, and reports what an uncached scan does."""
    tree = tmp_path / "sglang"
    shutil.copytree(sglang_tree("0.5.23"), tree)
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir, jobs=0)  # the last whole scan, in worker processes
    backend = tree / "srt" / "layers" / "attention" / "trtllm_mla_backend.py"
    text = backend.read_text()
    assert "def forward_decode(" in text, "the release moved: update this test"
    backend.write_text(text.replace("def forward_decode(", "def forward_decode_renamed(", 1))
    analysed.clear()
    cached = _json([tree], cache_dir)
    assert "trtllm_mla_backend.py" in analysed
    assert "cutedsl_mla_backend.py" in analysed  # its backend inherits from the edited one
    # ... and the two whose analysis followed a function of the edited file (both import
    # `make_persistent_multi_ctas_kv_counter_buffer` from it), not the tree's 161
    assert set(analysed) <= {
        "trtllm_mla_backend.py",
        "cutedsl_mla_backend.py",
        "dsa_backend.py",
        "trtllm_mha_backend.py",
    }, analysed
    assert cached == _json([tree], None, jobs=0)
    assert cached["findings"]
    # A backend the tree facts read whole (it quotes a registered backend's name in a
    # `raise`): a code edit there that leaves the facts as they were analyses that file...
    backend = tree / "srt" / "layers" / "attention" / "flashinfer_backend.py"
    backend.write_text(backend.read_text() + "\n\ndef _probe():\n    return 1\n")
    analysed.clear()
    cached = _json([tree], cache_dir)
    assert "flashinfer_backend.py" in analysed
    # ... and the files whose classes inherit from it (two in 0.5.23), not the tree's 161
    assert len(analysed) <= 4, analysed
    assert cached == _json([tree], None, jobs=0)


def test_code_digests_of_looked_up_files_come_from_the_cache_by_their_text(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from idxcheck.incremental.cache import Cache
    from idxcheck.source.index import ClassIndex

    text = "class Base:  # noted\n    def f(self):\n        return 1\n"
    cache = Cache(tmp_path / "cache", "z3-test")

    def facts_of(source: SourceFile) -> object:
        return SimpleNamespace(classes=ClassIndex([source]))

    first = SourceFile("base.py", text)
    parts.known_code_digests([("class", "Base")], facts_of(first), cache)  # type: ignore[arg-type]
    computed = first.code_digest()
    again = SourceFile("base.py", text)
    assert not again.has_code_digest()
    parts.known_code_digests(
        [("class", "Base"), ("class", "Missing")],
        facts_of(again),  # type: ignore[arg-type]
        cache,
    )
    assert again.has_code_digest() and again.code_digest() == computed
    edited = SourceFile("base.py", text.replace("return 1", "return 2"))
    parts.known_code_digests([("class", "Base")], facts_of(edited), cache)  # type: ignore[arg-type]
    assert edited.code_digest() != computed
    assert edited.code_digest() == SourceFile("base.py", edited.text).code_digest()
    cache.close()


def test_an_edit_of_a_helpers_file_analyses_its_callers_again(
    tmp_path: Path, analysed: list[str]
) -> None:
    """A backend whose width comes from a function of another file: editing only that file
    (which holds no class the backend inherits and feeds no tree fact) analyses the backend
    again, and the finding at the call follows the edit."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs" / "split_pass", tree / "split_pass")
    cache_dir = tmp_path / "cache"
    first = _json([tree], cache_dir)
    assert {"backend.py", "pass_layout.py"} <= set(analysed)
    assert any(
        f["path"].endswith("pass_layout.py") and f["code"] == "IDX002"  # type: ignore[index]
        for f in first["findings"]  # type: ignore[attr-defined]
    )
    analysed.clear()
    helper = tree / "split_pass" / "pass_layout.py"
    text = helper.read_text()
    assert "return step_budget + 1" in text, "the fixture's helper moved: update this test"
    helper.write_text(text.replace("return step_budget + 1", "return step_budget + 2"))
    edited = _json([tree], cache_dir)
    assert "backend.py" in analysed
    assert edited == _json([tree], None)
    messages = [f["message"] for f in edited["findings"]]  # type: ignore[attr-defined]
    assert any("`step_budget + 2`" in m for m in messages), messages


_ROW_BACKEND = """\
import torch

from .planner import Planner


class RowBackend:
    def __init__(self, model_runner):
        self.planner = Planner(model_runner)
        self.per_req = model_runner.server_args.speculative_num_draft_tokens

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            self.qo_indptr = torch.arange(0, bs * self.per_req + 1, self.per_req)
"""

_PLANNER = """\
class Planner:
    \"\"\"Rows per request, which the backend's qo_indptr steps by.\"\"\"

    def __init__(self, model_runner):
        self.rows = 0

    def widest(self):
        return self.rows
"""


def test_an_edit_of_a_constructed_class_keeps_its_callers_analysis(
    tmp_path: Path, analysed: list[str]
) -> None:
    """A backend that calls `Planner(...)`, a class of another file: the call resolves to no
    function, which only that file's top-level `def` names and imports decide. An edit of a
    method of the class leaves the backend's stored analysis valid; a new top-level function in
    that file analyses the backend again. Every scan gives what an uncached scan gives."""
    package = tmp_path / "tree" / "rows"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "backend.py").write_text(_ROW_BACKEND)
    planner = package / "planner.py"
    planner.write_text(_PLANNER)
    tree = tmp_path / "tree"
    cache_dir = tmp_path / "cache"
    _json([tree], cache_dir)
    assert "backend.py" in analysed
    analysed.clear()
    planner.write_text(_PLANNER.replace("def widest(", "def widest_rows("))
    cached = _json([tree], cache_dir)
    assert "backend.py" not in analysed
    assert cached == _json([tree], None)
    analysed.clear()
    planner.write_text(_PLANNER + "\n\ndef plan_rows(count):\n    return count\n")
    cached = _json([tree], cache_dir)
    assert "backend.py" in analysed
    assert cached == _json([tree], None)
