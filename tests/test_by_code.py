"""The warm path by code (`idxcheck.incremental.by_code`): a scan whose changed files differ
from the last stored scan's only in their comments takes that scan's outcome, with the changed
files' suppression comments read again; any other change goes the usual way. Each answer is
compared with a scan of the same files without the cache."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idxcheck.app.api import scan
from idxcheck.incremental import by_code, stamps
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict

from .realtree import vllm_tree

FIXTURES = Path("fixtures")


def _doc(tree: Path, cache_dir: Path | None) -> dict[str, object]:
    outcome = scan([str(tree)], Config(cache_dir=str(cache_dir) if cache_dir else None))
    doc = to_dict(outcome.result)
    doc.pop("stats")
    doc["suppressed"] = [s.finding.fingerprint for s in outcome.suppressed]
    doc["outcomes"] = [
        (n.span.path, n.code, n.span.line, n.mode, n.verdict.name) for n in outcome.result.outcomes
    ]
    return doc


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Files written by the test are as old as the test: without this, the settling delay
    # would keep the first scan's outcome (and its listing) out of the cache.
    monkeypatch.setattr(stamps, "SETTLE_SECONDS", 0.0)
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", root)
    (root / "notes.py").write_text("TITLE = 'nothing of a backend here'\n")
    return root


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each scan since was answered by code."""
    found: list[bool] = []
    unchanged = by_code.unchanged

    def spy(*args: object, **kwargs: object) -> tuple[by_code.Unchanged | None, object]:
        answer, read = unchanged(*args, **kwargs)  # type: ignore[arg-type]
        found.append(answer is not None)
        return answer, read

    monkeypatch.setattr(by_code, "unchanged", spy)
    return found


def _append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def _edited(tree: Path, cache_dir: Path, answers: list[bool]) -> bool:
    """The scan with the cache after an edit equals the scan without it; whether it was
    answered by code."""
    answers.clear()
    cached = _doc(tree, cache_dir)
    assert cached == _doc(tree, None)
    return answers == [True]


def test_a_comment_appended_is_answered_with_the_full_scan_s_outcome(
    tree: Path, tmp_path: Path, answers: list[bool]
) -> None:
    cache_dir = tmp_path / "cache"
    first = _doc(tree, cache_dir)
    assert first["findings"] and first["outcomes"], "not a vacuous comparison"
    _append(tree / "buffers_and_slices.py", "# a note on the buffers\n")
    assert _edited(tree, cache_dir, answers)
    # A rejected file whose new comment keeps it rejected, and the same file again.
    _append(tree / "notes.py", "# still no backend\n")
    assert _edited(tree, cache_dir, answers)
    _append(tree / "buffers_and_slices.py", "# another note\n")
    assert _edited(tree, cache_dir, answers)


def test_a_suppression_comment_is_read_again(
    tree: Path, tmp_path: Path, answers: list[bool]
) -> None:
    cache_dir = tmp_path / "cache"
    path = tree / "buffers_and_slices.py"
    first = _doc(tree, cache_dir)
    lines = path.read_text().splitlines(keepends=True)
    line = next(i for i, text in enumerate(lines) if "expect: IDX001" in text)
    lines[line] = lines[line].rstrip("\n") + "  # idxcheck: ignore[IDX001] replayed elsewhere\n"
    path.write_text("".join(lines))
    assert _edited(tree, cache_dir, answers)
    now = _doc(tree, cache_dir)
    assert len(now["suppressed"]) == len(first["suppressed"]) + 1  # type: ignore[arg-type]
    assert len(now["findings"]) < len(first["findings"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        # A line of comment inserted moves the code below it: the code digest changes.
        ("buffers_and_slices.py", lambda text: "# a new first line\n" + text),
        # The code itself.
        ("buffers_and_slices.py", lambda text: text.replace("self.steps", "self.steps + 1", 1)),
        # A comment inside a dataclass: the tree's keys count a dataclass by its whole text.
        (
            "dead_store.py",
            lambda text: text.replace(
                "    max_seqlen_q: int = 0\n", "    max_seqlen_q: int = 0  # rows\n", 1
            ),
        ),
        # A rejected file that the prefilter now reads.
        ("notes.py", lambda text: text + "qo_indptr = None\n"),
    ],
)
def test_any_other_change_goes_the_usual_way(
    tree: Path, tmp_path: Path, answers: list[bool], name: str, edit: object
) -> None:
    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    path = tree / name
    path.write_text(edit(path.read_text()))  # type: ignore[operator]
    assert not _edited(tree, cache_dir, answers)


def test_a_listing_after_a_code_edit_lends_the_unchanged_files_their_entries(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit of the code, the listing stored computes the code and contribution of the
    edited file alone and takes every other file's entry from the listing before; it is the
    listing a scan with an empty cache stores for the same files."""
    written: list[by_code.Listing] = []
    computed: list[str] = []
    write, code = by_code._write, by_code._code

    def keep(config: Config, key: str, listing: by_code.Listing) -> None:
        written.append(listing)
        write(config, key, listing)

    def count(source_code: str, contribution: str) -> str:
        computed.append(source_code)
        return code(source_code, contribution)

    monkeypatch.setattr(by_code, "_write", keep)
    monkeypatch.setattr(by_code, "_code", count)
    _doc(tree, tmp_path / "cache")
    read = [entry for entry in written[-1].files.values() if entry.kind == by_code.READ]
    assert len(read) > 3, "not a vacuous comparison"
    path = tree / "buffers_and_slices.py"
    path.write_text(path.read_text().replace("self.steps", "self.steps + 1", 1))
    computed.clear()
    _doc(tree, tmp_path / "cache")
    # The edited file's, once where the listing is compared and once where it is stored.
    assert len(set(computed)) == 1
    after_edit = written[-1]
    computed.clear()
    _doc(tree, tmp_path / "fresh")
    assert after_edit == written[-1]
    assert len(computed) == len(read)


def test_a_code_edit_is_read_once(
    tree: Path, tmp_path: Path, answers: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan after a code edit takes the edited file as the comparison with the listing
    read it (with that reading's readings), and finds what a scan without the cache finds."""
    from idxcheck.source import tree as tree_module

    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    path = tree / "buffers_and_slices.py"
    path.write_text(path.read_text().replace("self.steps", "self.steps + 1", 1))
    loaded: list[str] = []
    load_file = tree_module.load_file

    def spy(item: object, *args: object, **kwargs: object) -> None:
        loaded.append(item.display)  # type: ignore[attr-defined]
        load_file(item, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tree_module, "load_file", spy)  # the scan's reading, not the listing's
    monkeypatch.setattr(by_code, "load_file", load_file)
    answers.clear()
    cached = _doc(tree, cache_dir)
    assert answers == [False]
    assert loaded, "not a vacuous test: the scan read other files"
    assert not [p for p in loaded if p.endswith("buffers_and_slices.py")]
    assert cached == _doc(tree, None)


def test_a_file_added_goes_the_usual_way(tree: Path, tmp_path: Path, answers: list[bool]) -> None:
    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    (tree / "more.py").write_text("# only a comment\n")
    assert not _edited(tree, cache_dir, answers)


def test_the_answer_loads_neither_the_interpreter_nor_the_checker(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", root)
    env = dict(os.environ, IDXCHECK_CACHE_DIR=str(tmp_path / "cache"))
    # The first scan stores its outcome and its listing once its files are settled.
    time.sleep(stamps.SETTLE_SECONDS + 0.2)
    command = [sys.executable, "-m", "idxcheck", "scan", str(root)]
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 1, first.stderr
    _append(root / "buffers_and_slices.py", "# a note\n")
    probe = (
        "import sys\n"
        "from idxcheck.cli import main\n"
        "sys.argv = ['idxcheck', 'scan', sys.argv[1]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('interp.interpreter', 'check.pipeline', 'check.analyse', 'check.checker')\n"
        "loaded = [m for m in heavy if 'idxcheck.' + m in sys.modules]\n"
        "print('LOADED', sorted(loaded))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, str(root)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    report, _, loaded = run.stdout.partition("LOADED")
    assert loaded.strip() == "[]", run.stdout + run.stderr
    timing = re.compile(r" in [0-9.]+s$", re.M)
    assert timing.sub("", report) == timing.sub("", first.stdout)


@pytest.mark.network
def test_a_comment_edit_of_a_vllm_backend_is_answered_by_code(
    tmp_path: Path, answers: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stamps, "SETTLE_SECONDS", 0.0)
    root = tmp_path / "vllm"
    shutil.copytree(vllm_tree("0.33.0"), root)
    backend = root / "v1" / "attention" / "backends" / "mla" / "rocm_aiter_mla.py"
    focused = Config(cache_dir=str(tmp_path / "cache"), focus=(str(backend),))
    first = _scan_doc(root, focused)
    assert first["outcomes"], "not a vacuous comparison"
    _append(backend, "# a note on the decode metadata\n")
    answers.clear()
    assert _scan_doc(root, focused) == first
    assert answers == [True]


def _scan_doc(tree: Path, config: Config) -> dict[str, object]:
    outcome = scan([str(tree)], config)
    doc = to_dict(outcome.result)
    doc.pop("stats")
    doc["outcomes"] = [
        (n.span.path, n.code, n.span.line, n.mode, n.verdict.name, n.reason)
        for n in outcome.result.outcomes
    ]
    return doc
