"""What a scan reuses from earlier scans besides verdicts: the tree facts (modes, runner widths,
backend constraints) while no file they depend on changed, and the prefilter's rejection of a
file while its stamp is unchanged. Each reuse gives exactly the result of a scan without it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from idxcheck.app import api
from idxcheck.check import pipeline
from idxcheck.facts import constraints
from idxcheck.facts import tree as tree_facts
from idxcheck.incremental import by_code, stamps
from idxcheck.incremental.cache import Cache, solver_version
from idxcheck.incremental.keys import tree_keys
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
from idxcheck.report.json_format import to_dict
from idxcheck.source import tree as source_tree

from .realtree import sglang_tree

FIXTURES = Path("fixtures")


def _doc(paths: list[str], config: Config) -> str:
    doc = to_dict(api.scan(paths, config).result)
    doc["stats"].pop("seconds")  # type: ignore[attr-defined]
    return json.dumps(doc, indent=1)


def _facts_key(root: Path, tmp_path: Path) -> str:
    config = Config()
    profile = load_profile(config.profile)
    tree = source_tree.load_tree([str(root)], config, profile)
    return tree_keys(tree, config, profile, Cache(tmp_path, solver_version()))[0]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name in ("bugs", "correct", "runtime"):
        shutil.copytree(FIXTURES / name, root / name)
    return root


def test_backend_edit_keeps_the_tree_facts_key_and_mode_edit_changes_it(
    tree: Path, tmp_path: Path
) -> None:
    before = _facts_key(tree, tmp_path)
    backend = tree / "bugs" / "eagle_draft_extend_v2.py"
    backend.write_text(backend.read_text().replace("_fill_draft_extend", "_fill_v2"))
    assert _facts_key(tree, tmp_path) == before
    # A dataclass of a backend file can be read by a runner: its fields count.
    backend.write_text(backend.read_text().replace("    max_extend_len: int\n", ""))
    assert _facts_key(tree, tmp_path) != before
    after_dataclass = _facts_key(tree, tmp_path)
    enum = tree / "runtime" / "forward_mode.py"
    enum.write_text(enum.read_text() + "\n")
    assert _facts_key(tree, tmp_path) != after_dataclass


def test_results_with_cached_tree_facts_equal_results_without(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = Config(cache_dir=str(tmp_path / "cache"))
    _doc([str(tree)], cached)
    calls: list[int] = []
    read = pipeline.find_mode_model
    monkeypatch.setattr(
        pipeline,
        "find_mode_model",
        lambda *a: calls.append(1) or read(*a),  # type: ignore[func-returns-value]
    )
    backend = tree / "bugs" / "eagle_draft_extend_v2.py"
    backend.write_text(backend.read_text().replace("_fill_draft_extend", "_fill_v2"))
    warm = _doc([str(tree)], cached)
    assert calls == [], "the tree facts came from the cache"
    assert warm == _doc([str(tree)], Config())
    enum = tree / "runtime" / "forward_mode.py"
    enum.write_text(enum.read_text().replace("TARGET_VERIFY", "TARGET_CHECK"))
    calls.clear()
    changed = _doc([str(tree)], cached)
    assert calls == [1], "an edited enum is read again"
    assert changed == _doc([str(tree)], Config())
    assert changed != warm


RUNNER = """from forward_mode import ForwardMode


class VerifyGraphRunner:
    def __init__(self, model_runner):
        self.capture_forward_mode = ForwardMode.TARGET_VERIFY
        self.num_tokens_per_bs = model_runner.server_args.speculative_num_draft_tokens
"""


def test_a_runner_file_is_read_again_only_when_it_or_what_it_reads_changes(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tree facts are read again after the enum's file changes; a runner file that did not
    change is then served from the cache, unless the mode model it is read against changed."""
    (tree / "runner.py").write_text(RUNNER)
    cached = Config(cache_dir=str(tmp_path / "cache"))
    first = _doc([str(tree)], cached)
    read: list[str] = []
    original = tree_facts._read_runners

    def spy(source, *rest):  # type: ignore[no-untyped-def]
        read.append(Path(source.path).name)
        return original(source, *rest)

    monkeypatch.setattr(tree_facts, "_read_runners", spy)
    enum = tree / "runtime" / "forward_mode.py"
    enum.write_text(enum.read_text() + "\n\ndef describe(mode):\n    return mode.name\n")
    same = _doc([str(tree)], cached)
    assert read == [], "the runner came from the cache"
    assert same == first == _doc([str(tree)], Config())
    read.clear()  # the uncached scan read it
    enum.write_text(
        enum.read_text().replace("DLLM_EXTEND = auto()", "DLLM_EXTEND = auto()\n    X = 9")
    )
    changed = _doc([str(tree)], cached)
    # Every runner file is read against the new mode model: this one, and the fixtures' own
    # (bugs/ and correct/worker_dependent.py hold a runner each).
    assert sorted(read) == ["runner.py", "worker_dependent.py", "worker_dependent.py"], (
        "a new mode model: the runners are read again"
    )
    assert changed == _doc([str(tree)], Config())
    read.clear()
    runner = tree / "runner.py"
    runner.write_text(RUNNER.replace("speculative_num_draft_tokens", "speculative_num_steps"))
    edited = _doc([str(tree)], cached)
    assert read == ["runner.py"]
    assert edited == _doc([str(tree)], Config())
    assert edited != changed, "the runner's width reaches the findings"


REGISTRY = """@register_attention_backend("alpha")
def create_alpha(runner):
    return AlphaBackend(runner)
"""

CHECK = """def check_{n}(server_args):
    if server_args.attention_backend == "alpha":
        if server_args.speculative_eagle_topk > {n}:
            raise ValueError("speculative decoding on alpha needs topk at most {n}")
"""


def test_argument_checks_and_the_enum_are_read_again_only_where_their_files_changed(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "registry.py").write_text(REGISTRY)
    for n in (1, 2):
        (tree / f"checks_{n}.py").write_text(CHECK.format(n=n))
    cached = Config(cache_dir=str(tmp_path / "cache"))
    _doc([str(tree)], cached)
    checked: list[str] = []
    enums: list[int] = []
    read_checks = constraints._file_constraints
    read_enum = pipeline.find_mode_model

    def spy_checks(source, *rest):  # type: ignore[no-untyped-def]
        checked.append(Path(source.path).name)
        return read_checks(source, *rest)

    def spy_enum(*args):  # type: ignore[no-untyped-def]
        enums.append(1)
        return read_enum(*args)

    monkeypatch.setattr(constraints, "_file_constraints", spy_checks)
    monkeypatch.setattr(pipeline, "find_mode_model", spy_enum)
    edited = tree / "checks_1.py"
    edited.write_text(CHECK.format(n=3))
    after = _doc([str(tree)], cached)
    assert checked == ["checks_1.py"] and enums == []
    checked.clear()
    uncached = _doc([str(tree)], Config())
    every = sorted(checked)
    assert "checks_2.py" in every and enums, "the uncached scan reads them all"
    assert after == uncached
    # A new registered name: every file's checks are read again.
    checked.clear()
    enums.clear()
    (tree / "registry.py").write_text(
        REGISTRY + REGISTRY.replace("alpha", "beta").replace("Alpha", "Beta")
    )
    _doc([str(tree)], cached)
    assert sorted(checked) == every and enums == []
    # An edited enum: the mode model is read again.
    checked.clear()
    enum = tree / "runtime" / "forward_mode.py"
    enum.write_text(enum.read_text() + "\n\ndef describe(mode):\n    return mode.name\n")
    again = _doc([str(tree)], cached)
    assert enums == [1]
    assert checked == [], "the same mode model: the checks come from the cache"
    enums.clear()
    assert again == _doc([str(tree)], Config())


def test_rejected_files_are_not_read_again_until_they_change(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stamps, "SETTLE_SECONDS", 0.0)
    for n in range(20):
        (tree / f"plain_{n}.py").write_text(f"value_{n} = {n}\n")
    cached = Config(cache_dir=str(tmp_path / "cache"))
    _doc([str(tree)], cached)
    read: list[str] = []
    load = source_tree.load_file

    def spy(item: object, *rest: object) -> None:
        read.append(Path(item.path).name)  # type: ignore[attr-defined]
        load(item, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(source_tree, "load_file", spy)
    # The changed files are read where the listing by code is compared, and taken from there.
    monkeypatch.setattr(by_code, "load_file", spy)
    backend = tree / "bugs" / "eagle_draft_extend_v2.py"
    # A change of code (one of a comment only is answered without reading the tree:
    # `tests/test_by_code.py`).
    backend.write_text(backend.read_text() + "\nEDITED = True\n")
    _doc([str(tree)], cached)
    assert read and not any(name.startswith("plain_") for name in read)
    # A rejected file that now holds a site is read and analysed.
    shutil.copy(backend, tree / "plain_3.py")
    read.clear()
    grown = _doc([str(tree)], cached)
    assert "plain_3.py" in read
    assert grown == _doc([str(tree)], Config())
    assert "plain_3.py" in grown


@pytest.mark.network
def test_precommit_scan_of_a_release_with_cached_tree_facts(tmp_path: Path) -> None:
    root = tmp_path / "sglang"
    shutil.copytree(sglang_tree("0.5.23"), root)
    backend = root / "srt" / "layers" / "attention" / "trtllm_mla_backend.py"
    focused = replace(Config(cache_dir=str(tmp_path / "cache")), focus=(str(backend),))
    first = _doc([str(root)], focused)
    text = backend.read_text()
    backend.write_text(text.replace("def forward_decode(", "def forward_decode_(", 1))
    assert backend.read_text() != text, "the backend's method moved: update this test"
    second = _doc([str(root)], focused)
    assert second == _doc([str(root)], replace(focused, cache_dir=None))
    assert '"code": "IDX' in first and '"code": "IDX' in second
