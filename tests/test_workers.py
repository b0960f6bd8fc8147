"""Worker processes change the speed of a scan, never its result: the same report with one, two
or three workers, on the fixtures and on a whole real release."""

from __future__ import annotations

import json
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.parallel import workers
from idxcheck.report.json_format import to_dict
from idxcheck.source.files import SourceError, SourceFile
from idxcheck.source.index import ClassIndex

from .realtree import sglang_tree

FIXTURES = Path("fixtures")


def _report(paths: list[str], jobs: int) -> str:
    doc = to_dict(scan(paths, replace(Config(), jobs=jobs)))
    doc["stats"].pop("seconds")  # type: ignore[attr-defined]
    return json.dumps(doc, indent=1)


def test_fixture_reports_are_identical_for_any_number_of_workers() -> None:
    paths = [str(FIXTURES / name) for name in ("bugs", "correct", "runtime", "kernels")]
    one = _report(paths, 1)
    assert '"code": "IDX001"' in one and '"code": "IDX002"' in one, "not a vacuous comparison"
    assert _report(paths, 2) == one
    assert _report(paths, 3) == one


def test_small_files_share_a_task_and_the_report_stays_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weights = dict(enumerate((90, 50, 40, 30, 20)))
    order = list(weights)
    monkeypatch.setattr(workers, "TASK_BYTES", 70)
    monkeypatch.setattr(workers, "TASK_MIN_BYTES", 70)
    # The first file of each worker alone; the rest together while they fit (40 + 30, 20).
    assert workers._tasks(order, weights, 2) == [(0,), (1,), (2, 3), (4,)]
    assert workers._tasks(order, weights, 1) == [(0,), (1,), (2, 3), (4,)]
    assert workers._tasks(order, weights, 5) == [(i,) for i in order]
    monkeypatch.setattr(workers, "TASK_BYTES", 10_000)
    monkeypatch.setattr(workers, "TASK_MIN_BYTES", 10_000)
    assert workers._tasks(order, weights, 2) == [(0,), (1,), (2, 3, 4)]
    # Below TASK_BYTES, a task takes each job's share of what is left: 90 left at first, so
    # 45 (40 alone), then 50 left, 25 (30 alone), then 20.
    monkeypatch.setattr(workers, "TASK_MIN_BYTES", 0)
    assert workers._tasks(order, weights, 2) == [(0,), (1,), (2,), (3,), (4,)]
    # One job's share is all that is left.
    assert workers._tasks(order, weights, 1) == [(0,), (1, 2, 3, 4)]
    paths = [str(FIXTURES / name) for name in ("bugs", "correct", "runtime", "kernels")]
    monkeypatch.setattr(workers, "TASK_MIN_BYTES", 10_000)
    tasks = workers._tasks
    cut: list[list[tuple[int, ...]]] = []

    def recorded(*args: Any) -> list[tuple[int, ...]]:
        cut.append(tasks(*args))
        return cut[-1]

    monkeypatch.setattr(workers, "_tasks", recorded)
    grouped = _report(paths, 2)
    assert len(cut[0]) < sum(map(len, cut[0])), "several files to a task"
    monkeypatch.setattr(workers, "TASK_BYTES", 0)
    assert _report(paths, 2) == grouped  # a task per file


def test_a_task_weighs_the_code_its_analysis_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's weight counts its blocks that may hold a site and the classes they inherit
    from in other files, not the rest of its text."""
    base = "class Base:\n    def run(self, qo_indptr):\n        return qo_indptr\n"
    sub = "class Sub(Base):\n    def plan(self):\n        qo_indptr = self.run(1)\n"
    (tmp_path / "base.py").write_text("y = 2\n" * 50 + base)
    (tmp_path / "sub.py").write_text("x = 1\n" * 100 + sub)
    weights: dict[str, int] = {}
    weight = workers._weight

    def recorded(source: SourceFile, reads: workers.Reads) -> int:
        found = weights[os.path.basename(source.path)] = weight(source, reads)
        return found

    monkeypatch.setattr(workers, "_weight", recorded)
    scan([str(tmp_path)], replace(Config(), jobs=2))
    assert weights == {"base.py": len(base), "sub.py": len(sub) + len(base)}


def test_workers_are_used_only_where_they_pay_off(monkeypatch: pytest.MonkeyPatch) -> None:
    small = [SourceFile("a.py", "x = 1\n"), SourceFile("b.py", "y = 2\n")]
    large = [SourceFile(f"{n}.py", "#" * workers.MIN_PARALLEL_BYTES) for n in "abc"]
    assert workers.jobs_for(0, small) == 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert workers._cpus() == (cpus or 1)
    assert workers.jobs_for(0, large) == min(cpus or 1, workers.MAX_AUTO_JOBS, len(large))
    assert workers.jobs_for(2, small) == 2  # asked for: used even on small input
    assert workers.jobs_for(8, small) == 2  # never more workers than files
    assert workers.jobs_for(2, []) == 1  # nothing to analyse: every part from the cache
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert workers.jobs_for(2, large) == 1  # without fork the parts are computed here


def test_inherited_classes_in_other_files_count_towards_the_work() -> None:
    body = "".join(f"    def m{n}(self):\n        return {n}\n" for n in range(20_000))
    base = SourceFile("base.py", f"class Big:\n{body}")
    assert len(base.text) > workers.MIN_PARALLEL_BYTES
    children = [
        SourceFile("a.py", "class A(Big):\n    pass\n"),
        SourceFile("b.py", "class B(mod.Big, object):\n    pass\n"),
    ]
    classes = ClassIndex([base, *children])
    assert classes.inherited_size(children[0]) == len(base.text)
    assert classes.inherited_size(base) == 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert workers.jobs_for(0, children) == 1  # their own text is small
    assert workers.jobs_for(0, children, classes) == min(cpus or 1, workers.MAX_AUTO_JOBS, 2)
    assert workers.jobs_for(0, children[:1], classes) == 1  # one file: nothing to share


@pytest.mark.network
def test_release_report_is_identical_with_one_and_two_workers() -> None:
    tree = str(sglang_tree("0.5.23"))
    one = _report([tree], 1)
    assert '"refuted": 0' not in one, "the release has findings: not a vacuous comparison"
    assert _report([tree], 2) == one


KEEP_NODES = """
import gc
from idxcheck.sym.node import keep_interned_nodes
from idxcheck.sym.terms import Const, Sym, binop
before = binop("+", Sym("bs"), Const(7))
keep_interned_nodes()
assert binop("+", Sym("bs"), Const(7)) is before  # a node made before is still found
import weakref
made = binop("*", Sym("bs"), Const(3))
watch = weakref.ref(made)
del made
gc.collect()
assert watch() is not None and binop("*", Sym("bs"), Const(3)) is watch()  # held, not freed
print("ok")
"""


def test_a_worker_keeps_interned_nodes_and_still_interns() -> None:
    # In a process of its own: the switch holds nodes for the rest of the process.
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", KEEP_NODES], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_background_computation_runs_in_another_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workers, "_cpus", lambda: 2)
    pending = workers.in_background(os.getpid, 0)
    assert pending() != os.getpid()


def test_a_background_computation_stays_here_for_one_job_or_one_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workers, "_cpus", lambda: 2)
    assert workers.in_background(os.getpid, 1) is os.getpid
    monkeypatch.setattr(workers, "_cpus", lambda: 1)
    assert workers.in_background(os.getpid, 0) is os.getpid


def test_a_background_process_that_dies_is_computed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_cpus", lambda: 2)
    parent = os.getpid()

    def compute() -> str:
        if os.getpid() != parent:
            os._exit(3)  # killed, out of memory: no value comes back
        return "here"

    assert workers.in_background(compute, 0)() == "here"


def _read_here(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    """Two CPUs, and the paths of the files `module.name(source, ...)` reads in this process
    (a forked process appends to its own copy)."""
    monkeypatch.setattr(workers, "_cpus", lambda: 2)
    read_here: list[str] = []
    original = getattr(module, name)

    def spy(source: SourceFile, *rest: object) -> object:
        read_here.append(source.path)
        return original(source, *rest)

    monkeypatch.setattr(module, name, spy)
    return read_here


def _elsewhere(compute):  # type: ignore[no-untyped-def]
    return workers.in_background(compute, 0)


ARGUMENT_CHECKS = """def check_{n}(server_args):
    if server_args.attention_backend == "alpha":
        if server_args.speculative_eagle_topk > {n}:
            raise ValueError("speculative decoding on alpha needs topk at most {n}")
"""


def test_argument_checks_read_in_background_are_those_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idxcheck.facts import constraints
    from idxcheck.facts.modes import mode_model_from_profile
    from idxcheck.interp.state import ScanContext
    from idxcheck.profiles.schema import load_profile

    registry = '@register_attention_backend("alpha")\ndef make(runner):\n    return Alpha(runner)\n'
    padding = "# " + "x" * 78 + "\n"  # enough source for a process of its own to pay off
    files = [SourceFile.from_bytes("registry.py", registry.encode())]
    for n in range(1, 4):
        text = ARGUMENT_CHECKS.format(n=n) + padding * 1_000
        files.append(SourceFile.from_bytes(f"checks_{n}.py", text.encode()))
    profile = load_profile("sglang")
    ctx = ScanContext(profile, mode_model_from_profile(profile), lambda _n: None, {})
    here = constraints.read_constraints(files, ctx)()
    assert len(here.per_backend["alpha"]) == 3

    read_here = _read_here(monkeypatch, constraints, "_file_constraints")
    assert constraints.read_constraints(files, ctx, None, _elsewhere)() == here
    assert read_here == []
    small = [files[0], *(SourceFile(f.path, f.text[:300]) for f in files[1:])]
    assert constraints.read_constraints(small, ctx, None, _elsewhere)() == here
    assert read_here == ["checks_1.py", "checks_2.py", "checks_3.py"], "too little to send"


def test_runners_read_in_background_are_those_read_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from idxcheck.facts import tree as tree_facts
    from idxcheck.facts.mode_model import find_mode_model
    from idxcheck.facts.runners import width_definitions
    from idxcheck.profiles.schema import load_profile
    from idxcheck.source.index import DataclassIndex
    from idxcheck.source.tree import LoadedTree

    from .runner_texts import DRAFT_EXTEND_RUNNER, ENUM

    # Three runners of the same shape, each class long enough (a docstring of its own) for
    # the reading to share them out between two processes.
    def runner(n: int, lines: int) -> str:
        header = "class DraftExtendGraphRunner:\n"
        text = DRAFT_EXTEND_RUNNER.replace("class DraftExtendGraphRunner:", f"class Runner{n}:")
        doc = '    """' + "\n".join(["    " + "x" * 70] * lines) + '"""\n'
        assert header.replace("DraftExtendGraphRunner", f"Runner{n}") in text
        return text.replace(f"class Runner{n}:\n", f"class Runner{n}:\n{doc}", 1)

    def loaded(lines: int) -> LoadedTree:
        files = [SourceFile.from_bytes("forward_mode.py", ENUM.encode())]
        for n, share in enumerate((3, 2, 1)):
            files.append(SourceFile.from_bytes(f"runner_{n}.py", runner(n, lines * share).encode()))
        return LoadedTree(files=files)

    profile = load_profile("sglang")

    def model(tree: LoadedTree, elsewhere: object = None) -> object:
        modes, _ = find_mode_model(tree, profile)
        return tree_facts.runtime_model_from_tree(
            tree,
            profile,
            modes,
            DataclassIndex(tree.files),
            width_definitions(tree.files, profile.tree_width_functions),
            [],
            elsewhere=elsewhere,  # type: ignore[arg-type]
        )

    big = loaded(250)
    here = model(big)
    assert here.widths["DRAFT_EXTEND"], "the runners were not read"  # type: ignore[attr-defined]
    read_here = _read_here(monkeypatch, tree_facts, "_read_runners")
    # The heaviest runner read here, the two others (as heavy together) elsewhere.
    assert model(loaded(250), _elsewhere) == here
    assert read_here == ["runner_0.py"]
    read_here.clear()
    small = model(loaded(20), _elsewhere)
    assert read_here == ["runner_0.py", "runner_1.py", "runner_2.py"], "too little to send"
    # The same runners give widths to the same modes (their places differ: shorter docstrings).
    found = {m: [w.runner for w in ws] for m, ws in small.widths.items()}  # type: ignore[attr-defined]
    assert found == {m: [w.runner for w in ws] for m, ws in here.widths.items()}  # type: ignore[attr-defined]


def test_runner_files_are_shared_out_by_weight_from_a_size_on() -> None:
    from idxcheck.facts.tree import RUNNER_ELSEWHERE_BYTES, _read_away

    big = RUNNER_ELSEWHERE_BYTES
    assert _read_away({0: big, 1: 10}) == [1]  # the heaviest stays here, the rest goes
    assert _read_away({0: big // 4, 1: big // 2, 2: big // 4, 3: big // 8}) == [0, 2]
    assert _read_away({0: big}) == []  # one file: nothing to share
    assert _read_away({0: big // 4, 1: big // 4}) == []  # too little for a process


BASE = """class Base:
    def forward_decode(self, q):
        return q
"""
CHILD = """class Child{n}(Base):
    def init_forward_metadata(self, forward_batch):
        self.qo_indptr = forward_batch.qo_indptr
"""


def test_classes_that_several_later_workers_would_parse_are_parsed_once_in_the_parent() -> None:
    from types import SimpleNamespace

    from idxcheck.source.tree import HitLines

    base = SourceFile.from_bytes("base.py", BASE.encode())
    children = [SourceFile.from_bytes(f"c{n}.py", CHILD.format(n=n).encode()) for n in range(4)]
    hits = HitLines()
    for child in children:
        hits["c" + child.path[1:]] = [3]  # the `qo_indptr` line of each child class
    facts = SimpleNamespace(hits=hits, classes=ClassIndex([base, *children]))
    (block,) = base.blocks

    shared = workers._shared_classes([(0,), (1,), (2,)], children, facts, 2)  # type: ignore[arg-type]
    workers._share_parses(shared)
    assert not base.has_class_source(block), "one task after the first two: it parses it"
    shared = workers._shared_classes([(0,), (1,), (2,), (3,)], children, facts, 1)  # type: ignore[arg-type]
    workers._share_parses(shared)
    assert base.has_class_source(block), "three tasks after the first: parsed here, kept"
    base.forget_parses()
    assert base.has_class_source(block)

    runner = SourceFile.from_bytes("runner.py", BASE.replace("Base", "Runner").encode())
    (runner_block,) = runner.blocks
    runner.class_source(runner_block)  # as the tree facts parse a runner
    facts = SimpleNamespace(hits=hits, classes=ClassIndex([runner, *children]))
    workers._share_parses(workers._shared_classes([(0,)], children, facts, 1))  # type: ignore[arg-type]
    runner.forget_parses()
    assert not runner.has_class_source(runner_block), "no task needs it: dropped"
    subclass = SourceFile.from_bytes("c0.py", CHILD.format(n=0).replace("Base", "Runner").encode())
    runner.class_source(runner_block)
    facts = SimpleNamespace(hits=hits, classes=ClassIndex([runner, subclass]))
    workers._share_parses(workers._shared_classes([(0,)], [subclass], facts, 1))  # type: ignore[arg-type]
    runner.forget_parses()
    assert runner.has_class_source(runner_block), "parsed already and needed: kept"


def test_a_large_tree_read_by_two_processes_gives_the_same_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from idxcheck.app import api, scanning

    tree = tmp_path / "tree"
    for folder in ("a", "b"):
        (tree / folder).mkdir(parents=True)
    count = scanning.BACKGROUND_READ_FILES + 10
    for n in range(count):
        (tree / ("a" if n < count // 2 else "b") / f"m{n:04d}.py").write_text(f"x = {n}\n")
    # Files that pass, fail or carry a marker in both halves of the walk.
    for folder in ("a", "b"):
        for fixture in ("capture_replay.py", "eagle_draft_extend_v2.py"):
            text = (FIXTURES / "bugs" / fixture).read_text()
            (tree / folder / fixture).write_text(text)
        (tree / folder / "bad.py").write_bytes(b"qo_indptr = '\xff\xfe'\n")
        (tree / folder / "marked.py").write_text("y = 1  # idxcheck: ignore[IDX001]\n")
    monkeypatch.setattr(workers, "_cpus", lambda: 2)
    read_here: list[str] = []
    from idxcheck.source import tree as engine  # `api.scan` takes `load_file` from it when it runs

    original = engine.load_file

    def spy(candidate, *rest):  # type: ignore[no-untyped-def]
        read_here.append(candidate.display)  # a forked process appends to its own copy
        return original(candidate, *rest)

    monkeypatch.setattr(engine, "load_file", spy)

    def report(jobs: int) -> str:
        outcome = api.scan([str(tree)], replace(Config(), jobs=jobs))
        doc = to_dict(outcome.result)
        doc["stats"].pop("seconds")  # type: ignore[attr-defined]
        return json.dumps([doc, [str(s) for s in outcome.suppressed]], indent=1)

    one = report(1)
    assert len(read_here) == count + 8
    assert '"refuted": 0' not in one and "bad.py" in one
    read_here.clear()
    assert report(2) == one
    assert len(read_here) == (count + 8) // 2, "the later half was read elsewhere"


def test_a_shared_class_that_does_not_parse_is_left_to_its_workers() -> None:
    broken = SourceFile.from_bytes("b.py", b"class Base:\n    def f(self):\n        return (\n")
    (block,) = broken.blocks
    workers._share_parses([(broken, block)])  # the worker that needs it reports the error
    assert not broken.has_class_source(block)


Z3_PROBE = """
import json, sys
from dataclasses import replace
from idxcheck.parallel import workers
from idxcheck.model.config import Config
from idxcheck.app.run import scan
workers.TASK_BYTES = workers.TASK_MIN_BYTES = 1  # a task per file
result = scan(sys.argv[1:], replace(Config(), jobs=2))
print(json.dumps({"z3": "z3" in sys.modules, "refuted": result.stats.refuted}))
"""


@pytest.mark.parametrize("files", [2, 4, 5])
def test_z3_is_loaded_before_the_forks_only_for_many_tasks_a_worker(files: int) -> None:
    """With few tasks a worker (a pre-commit run) each worker loads z3 if it needs it; with
    more than two a worker, the parent loads it once for all the workers forked after the
    first."""
    import subprocess
    import sys

    bugs = sorted(str(p) for p in (FIXTURES / "bugs").glob("*.py"))[:files]
    done = subprocess.run(
        [sys.executable, "-c", Z3_PROBE, *bugs], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["refuted"] > 0  # the workers did solve
    assert probe["z3"] is (files > workers.SOLVER_FIRST_TASKS * 2)


HELPER_PROBE = """
import json, os, sys, time
from dataclasses import replace
from idxcheck.parallel import early, workers
from idxcheck.app.api import scan
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict

handed = []
helpers = []
original = workers._Helper.analyse
def analyse(self, *args):
    helpers.append(self.pid)
    parts = original(self, *args)
    handed.append(parts is not None)
    return parts
workers._Helper.analyse = analyse
if sys.argv[2] in ("dies", "early-dies"):
    workers._helper_main = lambda *pipes: os._exit(3)
forked = []
if sys.argv[2].startswith("early"):
    # As the entry does (`idxcheck.entry`), before anything of the scan is loaded.
    early.fork_helper()
    forked.append(early._FORKED[0])
edited = {}
if sys.argv[2] == "changed":
    # Every file is edited on disk after this process read it, before its helper reads again
    # the texts left out of what it is handed; they are put back after the scan.
    def analyse_edited(self, *args):
        for folder in sys.argv[4:]:
            for full in sorted(
                os.path.join(d, f) for d, _, files in os.walk(folder) for f in files
            ):
                with open(full) as handle:
                    edited[full] = handle.read()
                with open(full, "w") as handle:
                    handle.write(edited[full] + "# edited\\n")
        return analyse(self, *args)
    workers._Helper.analyse = analyse_edited
focus = tuple(sys.argv[3:4]) if sys.argv[2] in ("focused", "early", "early-dies") else None
jobs = 1 if sys.argv[2] == "early-unused" else 0
outcome = scan(sys.argv[4:], replace(Config(), cache_dir=sys.argv[1], focus=focus, jobs=jobs))
doc = to_dict(outcome.result)
doc["stats"].pop("seconds")
for full, text in edited.items():
    with open(full, "w") as handle:
        handle.write(text)
# Each helper was stopped: killed, its end not waited for (`workers._reap`), so it ends now.
ended = []
for pid in sorted(set(helpers + forked)):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        except ChildProcessError:  # reaped already
            break
        time.sleep(0.01)
    else:
        continue
    ended.append(pid)
print(json.dumps({
    "handed": handed,
    "ended": ended == sorted(set(helpers + forked)),
    "early_used": bool(forked) and helpers == forked,
    "left": early._FORKED is not None,
    "doc": doc,
}))
"""


@pytest.mark.parametrize(
    "helper", ["lives", "dies", "focused", "changed", "early", "early-dies", "early-unused"]
)
def test_a_helper_loads_libcst_meanwhile_and_its_parts_are_those_analysed_here(
    tmp_path: Path, helper: str
) -> None:
    """In a process that has not loaded libcst (the command), a scan with the cache hands its
    files to a helper forked as it starts: the report is the one analysed in one process,
    and where the helper dies the scan analyses them itself. Focused on a file (a pre-commit
    run), the helper parses its classes ahead. The files' texts are left out of what the
    helper is handed: where the files changed on disk since the scan read them, the helper
    gives up and the scan analyses the texts it read. A helper forked by the entry before
    the scan (`parallel.early`) is the one used, or stopped where the scan uses none (one
    job). Every helper ends."""
    import shutil
    import subprocess
    import sys

    paths = []
    for name in ("bugs", "correct"):
        # Without the fixtures that hold a graph runner: reading a runner for the tree facts
        # parses it here, and a process that has loaded libcst forks no helper.
        skip = shutil.ignore_patterns("worker_dependent.py")
        shutil.copytree(FIXTURES / name, tmp_path / name, ignore=skip)
        paths.append(str(tmp_path / name))
    focus = str(tmp_path / "bugs" / "eagle_draft_extend_v2.py")
    done = subprocess.run(
        [sys.executable, "-c", HELPER_PROBE, str(tmp_path / "cache"), helper, focus, *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    used = helper not in ("early-unused",)
    assert probe["handed"] == ([helper not in ("dies", "changed", "early-dies")] if used else [])
    assert probe["ended"]
    assert probe["early_used"] is (helper in ("early", "early-dies"))
    assert not probe["left"]
    if helper in ("focused", "early", "early-dies"):
        config = replace(Config(), jobs=1, focus=(focus,))
        here = to_dict(scan(paths, config))
        here["stats"].pop("seconds")  # type: ignore[attr-defined]
        assert len(here["findings"]) < len(json.loads(_report(paths, 1))["findings"])
    else:
        here = json.loads(_report(paths, 1))
    assert probe["doc"] == here
    assert here["findings"], "not a vacuous comparison"


def test_no_helper_where_it_cannot_pay_off() -> None:
    # Once libcst is loaded here, a helper would load nothing ahead of the scan.
    from idxcheck.source.lazy_import import is_loaded, lazy_module, load_now

    load_now(lazy_module("libcst"))
    assert is_loaded("libcst")
    with workers.analysis_helper(True):
        assert workers._HELPER is None
    with workers.analysis_helper(False):
        assert workers._HELPER is None


def test_helper_messages_carry_their_length() -> None:
    import threading

    read_end, write_end = os.pipe()
    payload = os.urandom(300_000)  # several times a pipe's buffer
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(workers._read_message(read_end)))
    reader.start()
    workers._write_message(write_end, payload)
    workers._write_message(write_end, b"")
    reader.join()
    assert received == [payload]
    assert workers._read_message(read_end) == b""  # the empty message
    os.write(write_end, (10).to_bytes(8, "little") + b"short")
    os.close(write_end)
    assert workers._read_message(read_end) == b""  # cut off: the writer closed the pipe
    os.close(read_end)


def test_a_block_parsed_ahead_is_taken_once_and_only_for_its_text(tmp_path: Path) -> None:
    from idxcheck.source import files as source_module

    text = "class A:\n    def f(self):\n        return 1\n"
    first = SourceFile("a.py", text)
    (block,) = first.blocks
    source_module.parse_ahead(first.parse_text(block))
    ahead = source_module._parsed_ahead[first.parse_text(block)][1]
    assert ahead is not None
    assert first.parse_block(block) is ahead.body[0]  # taken from the parse made ahead
    assert not source_module._parsed_ahead
    again = SourceFile("b.py", text)
    assert again.parse_block(again.blocks[0]) is not ahead.body[0]  # taken once only
    source_module.parse_ahead(first.parse_text(block))
    edited = SourceFile("a.py", text.replace("return 1", "return 2"))
    node = edited.parse_block(edited.blocks[0])
    assert "return 2" in edited.code_for(node)  # a changed text is parsed anew
    source_module._parsed_ahead.clear()
    deep = "class B:\n    x = " + "(" * 300 + ")" * 300 + "\n"
    source_module.parse_ahead(deep)  # too deep to parse: left to its use, which reports it
    assert not source_module._parsed_ahead
    broken = SourceFile("c.py", "class C:\n    x = (\n")
    source_module.parse_ahead(broken.parse_text(broken.blocks[0]))
    assert source_module._parsed_ahead  # a syntax error is an outcome like a tree
    with pytest.raises(SourceError):
        broken.parse_block(broken.blocks[0])
    assert not source_module._parsed_ahead


def test_the_helper_parses_the_classes_wanted_until_a_message_arrives(tmp_path: Path) -> None:
    from idxcheck.source import files as source_module

    path = str(FIXTURES / "bugs" / "eagle_draft_extend_v2.py")
    classes = [b for b in SourceFile(path, Path(path).read_text()).blocks if b.kind == "class"]
    assert len(classes) > 1, "not a vacuous test"
    read_end, write_end = os.pipe()
    try:
        source_module._parsed_ahead.clear()
        parser = workers._AheadParser(read_end)
        parser.parse([(path, None), (str(tmp_path / "missing.py"), None)])
        assert len(source_module._parsed_ahead) == len(classes)  # every class of the file
        source_module._parsed_ahead.clear()
        last = classes[-1]
        parser.parse([(path, (last.start_line, last.end_line))])
        assert list(source_module._parsed_ahead) == [
            SourceFile(path, Path(path).read_text()).parse_text(last)
        ]
        source_module._parsed_ahead.clear()
        os.write(write_end, b"x")  # a message is here: nothing more is parsed ahead
        parser.parse([(path, None)])
        assert not source_module._parsed_ahead
    finally:
        source_module._parsed_ahead.clear()
        os.close(read_end)
        os.close(write_end)


def test_the_helper_is_hinted_the_classes_the_files_to_analyse_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from idxcheck.source.tree import HitLines

    base = SourceFile.from_bytes("base.py", (BASE + "\n\nclass Unused:\n    pass\n").encode())
    children = [SourceFile.from_bytes(f"c{n}.py", CHILD.format(n=n).encode()) for n in range(2)]
    hits = HitLines()
    for child in children:
        hits[child.path] = [3]
    facts = SimpleNamespace(hits=hits, classes=ClassIndex([base, *children]))
    hinted: list[list[workers.Wanted]] = []
    monkeypatch.setattr(workers, "_HELPER", SimpleNamespace(hint=hinted.append))
    monkeypatch.setattr(workers, "is_loaded", lambda name: False)
    workers.hint_helper(children, facts)  # type: ignore[arg-type]
    # The base class, which both children inherit, first; each child's own class after it.
    assert hinted == [[("base.py", (1, 3)), ("c0.py", (1, 3)), ("c1.py", (1, 3))]]
    monkeypatch.setattr(workers, "is_loaded", lambda name: True)
    workers.hint_helper(children, facts)  # type: ignore[arg-type]
    assert len(hinted) == 1, "with libcst loaded here, the helper is not used"


def test_a_hint_is_cut_to_what_the_pipe_takes_at_once() -> None:
    read_end, write_end = os.pipe()
    helper = object.__new__(workers._Helper)
    helper._send, helper._receive, helper.pid = write_end, None, 0
    helper._ahead, helper._directory = (), None  # not a pre-commit run: nothing is kept
    try:
        wanted = [(f"pkg/module_{n}.py", (n, n + 10)) for n in range(1000)]
        helper.hint(wanted)
        os.close(write_end)
        message = workers._read_message(read_end)
        assert len(message) + workers._LENGTH_BYTES <= workers.HINT_BYTES
        kind, sent = pickle.loads(message)
        assert kind == "hint" and sent and sent == wanted[: len(sent)]
    finally:
        os.close(read_end)


def test_a_file_read_from_disk_is_pickled_for_the_helper_without_its_text(tmp_path: Path) -> None:
    from idxcheck.source.files import TextChanged, data_digest, texts_left_out

    path = tmp_path / "a.py"
    path.write_bytes(b"class A:\n    x = 1\n")
    read = SourceFile.from_bytes(str(path), path.read_bytes())
    read.data_digest = data_digest(path.read_bytes())
    made = SourceFile("b.py", "class B:\n    y = 2\n")  # not read from disk: its text goes
    with texts_left_out():
        data = pickle.dumps((read, made))
    assert b"x = 1" not in data and b"y = 2" in data
    assert b"x = 1" in pickle.dumps(read)  # outside, a pickle holds the text
    again, other = pickle.loads(data)
    assert again.length == read.length and other.text == made.text
    assert again.text == read.text  # read again from the file
    path.write_bytes(b"class A:\n    x = 2\n")
    changed, _ = pickle.loads(data)
    with pytest.raises(TextChanged):
        assert changed.text is None  # raises first
    assert not issubclass(TextChanged, SourceError)  # never reported as the file's error


def _fake_work(task: tuple[int, ...]) -> list[tuple[int, Any]]:
    if -1 in task:
        raise ValueError("no such file")
    if -2 in task:
        os._exit(9)  # a worker killed before it answered
    if -3 in task:
        time.sleep(60)  # a worker still at work when another fails
    return [(index, ("part", index, os.getpid())) for index in task]


@pytest.mark.parametrize("last_here", [False, True])
def test_each_task_of_a_pre_commit_run_is_analysed_in_a_process_of_its_own(
    monkeypatch: pytest.MonkeyPatch, last_here: bool
) -> None:
    """Where there are no more tasks than workers, each is forked for its task without a pool
    (`_fork_each`); in the helper, the last one is analysed there. Every part comes back."""
    monkeypatch.setattr(workers, "_work", _fake_work)
    tasks = [(0, 1), (2,), (3,)]
    done = [part for result in workers._fork_each(tasks, last_here) for part in result]
    assert [index for index, _ in done] == ([3, 0, 1, 2] if last_here else [0, 1, 2, 3])
    pids = {part[2] for _, part in done}
    assert len(pids) == 3
    assert (os.getpid() in pids) is last_here


@pytest.mark.parametrize("bad", [-1, -2])
def test_a_worker_that_fails_or_dies_fails_the_analysis_as_a_pool_would(
    monkeypatch: pytest.MonkeyPatch, bad: int
) -> None:
    monkeypatch.setattr(workers, "_work", _fake_work)
    with pytest.raises(RuntimeError) as raised:
        list(workers._fork_each([(0,), (bad,), (-3,)], last_here=False))
    said = "ValueError: no such file" if bad == -1 else "ended without its parts"
    assert said in str(raised.value)
    # The workers are gone: the one not read yet was killed, and none is left to reap.
    deadline = time.monotonic() + 10
    while workers._UNREAPED and time.monotonic() < deadline:
        workers._reap()
        time.sleep(0.01)
    assert not workers._UNREAPED
