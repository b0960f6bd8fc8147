"""Where a pre-commit run's wall time goes, across its processes.

    python -m bench.hook_timeline [--project sglang|vllm] [--version V] [--runs 5]
        [--hook method|facts]

Copies the release into a scratch project with a `[tool.idxcheck]` table (as `bench.speed`
does), fills its cache with one `idxcheck scan --changed-only FILE`, then renames the same
method of the file as `bench.speed`'s method hook (`--hook method`, the default: the
backend) or its facts-backend hook (`--hook facts`: a file the tree facts read) does, a new
name each run, waits until the
edit is settled as a commit finds it (`bench.speed.settle`) and runs the hook again, each run
in a child process that wraps a few functions of the scan with a clock. Every
process of the run (the scan, its analysis helper, the helper's workers) appends what it timed
to one log; fork keeps the wrappers in the children. Prints, per run and as medians:

- start: from the launch of the command to the first worker's file analysis (the interpreter,
  the imports, the walk, the tree facts and parts from the cache, the hand-over to the
  helper, the fork), and of it the scan's reading of the tree facts (`cached_tree_facts`:
  from the cache, or read again after a facts edit) and of the parts the cache holds
  (`stored_part`, summed over the files);
- per worker: its file analysis, and of it the classes (`analyse_class`), of those the refill
  and store passes, the module constants read, and the checks (`check_facts`, with the readers
  analysis);
- end: from the last worker's end to the command's exit (the parts back to the scan, the
  report, the exit).

The clocks cost a few microseconds a call; the wrapped functions are called tens of times.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The child imports only this module and what the scan imports anyway: the rest is imported
# by `main`, so that the start measured is the hook's.

# (module, attribute path, label): what the child wraps.
WRAPPED = (
    ("idxcheck.parallel.workers", "_work", "worker"),
    ("idxcheck.incremental.parts", "analyse_file", "analyse_file"),
    ("idxcheck.check.analyse", "analyse_class", "analyse_class"),
    ("idxcheck.check.analyse", "check_facts", "check_facts"),
    ("idxcheck.interp.classes", "_refills_and_stores", "refills_and_stores"),
    ("idxcheck.source.modules", "_read_constants", "module_constants"),
    ("idxcheck.facts.readers", "ClassReaders.__init__", "readers"),
    ("idxcheck.check.pipeline", "cached_tree_facts", "tree_facts"),
    ("idxcheck.parallel.workers", "stored_part", "stored_parts"),
)


def _wrap(log: Path, origin: float, module: str, path: str, label: str) -> None:
    owner: Any = importlib.import_module(module)
    parts = path.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    original: Callable[..., Any] = getattr(owner, parts[-1])

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        try:
            return original(*args, **kwargs)
        finally:
            end = time.time()
            with log.open("a") as handle:
                handle.write(f"{os.getpid()} {label} {start - origin:.4f} {end - origin:.4f}\n")

    setattr(owner, parts[-1], timed)


def child(log: Path, origin: float, argv: list[str]) -> None:
    """The hook itself, with the clocks in place: `idxcheck` with `argv`."""
    for module, path, label in WRAPPED:
        _wrap(log, origin, module, path, label)
    from idxcheck.entry import entry

    sys.argv = ["idxcheck", *argv]
    entry()


def plain_run(project: Path, env: dict[str, str], hook: list[str]) -> float:
    """The same hook without the clocks: the wall time a user sees."""
    import subprocess

    start = time.perf_counter()
    command = [sys.executable, "-m", "idxcheck", *hook]
    subprocess.run(command, cwd=project, env=env, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def one_run(project: Path, env: dict[str, str], hook: list[str], log: Path) -> dict[str, float]:
    import subprocess

    log.unlink(missing_ok=True)
    origin = time.time()
    command = [
        sys.executable,
        "-m",
        "bench.hook_timeline",
        "--child",
        str(log),
        repr(origin),
        *hook,
    ]
    subprocess.run(command, cwd=project, env=env, stdout=subprocess.DEVNULL, check=False)
    total = time.time() - origin
    return _phases(log, total)


def _phases(log: Path, total: float) -> dict[str, float]:
    rows = [line.split() for line in log.read_text().splitlines()]
    by_pid: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for pid, label, start, end in rows:
        by_pid[pid].append((label, float(start), float(end)))
    # The processes that analysed files: the workers, or the helper alone where the files
    # were too few to share (`idxcheck.parallel.workers.jobs_for`).
    workers = {
        pid: spans for pid, spans in by_pid.items() if any(s[0] == "analyse_file" for s in spans)
    }
    found: dict[str, float] = {"total": total}
    found["workers"] = sum(1 for spans in by_pid.values() if any(s[0] == "worker" for s in spans))
    if not workers:
        return found
    starts = [min(s[1] for s in spans if s[0] == "analyse_file") for spans in workers.values()]
    ends = [max(s[2] for s in spans if s[0] == "analyse_file") for spans in workers.values()]
    found["start"] = min(starts)
    # The scan's own process: the one that read the tree facts.
    scan = next(
        (spans for spans in by_pid.values() if any(s[0] == "tree_facts" for s in spans)), []
    )
    for label in ("tree_facts", "stored_parts"):
        found[label] = sum(e - s for name, s, e in scan if name == label)
    found["end"] = total - max(ends)
    # The pieces of the process that ends last: the one the run waits for.
    slowest = max(workers.values(), key=lambda spans: max(s[2] for s in spans))
    for label in ("analyse_file", "analyse_class", "refills_and_stores", "module_constants"):
        found[label] = sum(e - s for name, s, e in slowest if name == label)
    found["check_facts"] = sum(e - s for name, s, e in slowest if name == "check_facts")
    found["readers"] = sum(e - s for name, s, e in slowest if name == "readers")
    return found


PIECES = (
    ("total", "the command, launch to exit"),
    ("start", "launch to the first file analysis"),
    ("tree_facts", "  of it, the scan's tree facts"),
    ("stored_parts", "  of it, the scan's parts from the cache"),
    ("analyse_file", "slowest analysing process: its files"),
    ("analyse_class", "  of it, the classes"),
    ("refills_and_stores", "    of those, the refill and store passes"),
    ("module_constants", "    of those, the module constants read"),
    ("check_facts", "  of it, the checks"),
    ("readers", "    of those, the readers analysis"),
    ("end", "the last analysis's end to the exit"),
)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4:])
        return
    import argparse
    import shutil
    import statistics
    import tempfile

    from bench.speed import PROJECTS, compile_idxcheck, settle

    parser = argparse.ArgumentParser()
    parser.add_argument("--project", choices=sorted(PROJECTS), default="sglang")
    parser.add_argument("--version", help="the release (default: 0.5.23 or 0.33.0)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hook", choices=("method", "facts"), default="method")
    options = parser.parse_args()
    project_of = PROJECTS[options.project]
    tree = project_of.download(options.version or project_of.default_version)
    compile_idxcheck()
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        env = dict(os.environ, IDXCHECK_CACHE_DIR=str(base / "cache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # the hook's imports as a user's: compiled
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)  # this bench, in the child
        project = base / "project"
        shutil.copytree(tree, project / tree.name)
        (project / "pyproject.toml").write_text("[tool.idxcheck]\n")
        time.sleep(2.5)  # past the 2 s within which a file's stamp is not trusted
        if options.hook == "method":
            edited, renamed = project_of.backend, project_of.renamed
        else:
            edited, renamed = project_of.facts_target(tree)
        backend = project / tree.name / edited
        hook = ["scan", "--changed-only", str(Path(tree.name) / edited)]
        log = base / "timeline.log"
        one_run(project, env, hook, log)  # the first commit fills the cache
        original = backend.read_text()
        assert renamed in original, f"{renamed} not in {edited}"
        runs: list[dict[str, float]] = []
        plain: list[float] = []
        for run in range(options.runs):
            # A name not used before each time, so that no cached result answers.
            backend.write_text(original.replace(renamed, f"{renamed[:-1]}_p{run}(", 1))
            settle()
            plain.append(plain_run(project, env, hook))
            backend.write_text(original.replace(renamed, f"{renamed[:-1]}_{run}(", 1))
            settle()
            runs.append(one_run(project, env, hook, log))
    print(f"# {options.project} {tree.parent.name}: {options.hook} hook on {edited}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {options.runs} runs, {os.cpu_count()} CPUs")
    each = " ".join(f"{v:.3f}" for v in plain)
    label = "the same hook without the clocks"
    print(f"{label:<45} median {statistics.median(plain):.3f} s   ({each})")
    print(
        "workers forked per run (0: analysed in the helper): "
        + " ".join(str(int(r.get("workers", 0))) for r in runs)
    )
    if not any("start" in r for r in runs):
        # The wrapped names moved: say so rather than print a timeline without its pieces.
        wrapped = next(w[:2] for w in WRAPPED if w[2] == "analyse_file")
        raise SystemExit(f"no file analysis was timed: is {'.'.join(wrapped)} still called?")
    for key, label in PIECES:
        values = [r[key] for r in runs if key in r]
        if not values:
            continue
        each = " ".join(f"{v:.3f}" for v in values)
        print(f"{label:<45} median {statistics.median(values):.3f} s   ({each})")


if __name__ == "__main__":
    main()
