"""idxcheck against ruff on a whole SGLang or vLLM release, side by side in one run.

    python -m bench.speed [--project sglang|vllm] [--version 0.5.23] [--runs 3] [--warm-runs 15]
                          [--hook-runs 7]

Downloads the release from the package index into `.cache/` if needed (`--version` defaults to
0.5.23 for SGLang and 0.33.0 for vLLM), then measures, alternating the two tools run by run so
that both see the same machine state:

- cold: `idxcheck scan --no-cache TREE` against `ruff check --no-cache --select E9,F TREE`;
- first: `idxcheck scan TREE` with an empty cache folder (no target): what a CI job that keeps
  no cache runs, the cold scan plus storing what later scans reuse;
- warm: both with a populated cache and nothing changed;
- pre-commit: `idxcheck scan --changed-only FILE` in a copy of the tree (a project with a
  `[tool.idxcheck]` table), with the cache of the previous runs present (what the hook sees on
  a second commit), once after appending a comment to one backend file and once after an edit
  of one of its methods (a method renamed, to a new name each run), and after the same edit
  of a backend that the tree facts also read; each timed once the edited file's stamp is
  settled, as a commit finds it (`settle`), and the method edit also as soon as it is written;
- rescan: `idxcheck scan` of the whole copy after the same kind of method edit (no target);
- memory: peak of the summed proportional set sizes of the run's processes (the scan and the
  workers it forks, so that pages they share count once), sampled every 50 ms from /proc, or
  the kernel's peak of the largest single process where that is higher;
- growth: one cold idxcheck run over nested subsets of the tree (files in the subset vs time).

`--runs` counts the cold and first runs and the rescans; `--hook-runs` the runs of each
pre-commit kind, whose first settled method edit is often the slowest of its kind (three runs
gave medians of 0.62 and 0.42 s for vLLM's method hook the same morning, seven runs 0.47 s:
bench/RESULTS.md, "Both projects' speed after the block shares").

Prints medians, min-max, the ratios, and whether each target of the speed work holds.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.sglang_tree import sglang_tree
from bench.vllm_tree import vllm_tree


@dataclass(frozen=True)
class Project:
    """What the bench edits in a project's tree: a backend whose method it renames, and a file
    the tree facts also read, so that an edit there reads the facts again."""

    download: Callable[[str], Path]
    default_version: str
    backend: str
    renamed: str
    facts_file: str
    facts_renamed: str
    subsets: tuple[str, ...]
    # Where a release has no `facts_file`, the first of these (file, method) that it has.
    other_facts_files: tuple[tuple[str, str], ...] = ()

    def facts_target(self, tree: Path) -> tuple[str, str]:
        for path, renamed in ((self.facts_file, self.facts_renamed), *self.other_facts_files):
            if (tree / path).is_file():
                return path, renamed
        raise SystemExit(f"none of the facts files of the bench is in {tree}")


PROJECTS = {
    # flashinfer_backend.py quotes a registered backend's name in a `raise` of an argument
    # check, which the SGLang tree facts read.
    "sglang": Project(
        sglang_tree,
        "0.5.23",
        "srt/layers/attention/trtllm_mla_backend.py",
        "def forward_decode(",
        "srt/layers/attention/flashinfer_backend.py",
        "def forward_decode(",
        ("srt/layers/attention", "srt/layers", "srt", "."),
    ),
    # The dispatcher states the width of a uniform decode (`uniform_decode_query_len`), which
    # the vLLM tree facts read. The methods renamed are, as SGLang's, none the profile names (a
    # builder's entry point or the dispatcher's padding would change what the scan checks):
    # the forward that reads the metadata, and a method listing the capture sizes.
    "vllm": Project(
        vllm_tree,
        "0.33.0",
        "v1/attention/backends/mla/rocm_aiter_mla.py",
        "def forward_mqa(",
        "v1/cudagraph_dispatcher.py",
        "def get_capture_descs(",
        ("v1/attention", "v1", "."),
        # 0.34.0 has no dispatcher: the width is the configuration's property, which the
        # tree facts read in `config/vllm.py`; the method renamed there is one the scan does
        # not check.
        (("config/vllm.py", "def get_decode_cudagraph_query_lens("),),
    ),
}


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mb: float
    exit_code: int
    # User plus system CPU time of the scan and of the workers it waited for: on a loaded
    # machine a steadier measure than the wall time, which waits for the other processes.
    cpu_seconds: float = 0.0


def measure(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Run:
    started = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    # Memory is sampled by a thread, so that the wall time comes from a blocking wait (a
    # polling loop would round every run up to its polling period).
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # 0 clean, 1 findings: anything else timed a failure
        raise SystemExit(f"{' '.join(args)} exited with {proc.returncode}: nothing measured")
    # The kernel's peak of the largest single process, where sampling every 50 ms missed it.
    peak_mb = max(usage.ru_maxrss * 1024, peak[0]) / 2**20
    return Run(seconds, peak_mb, proc.returncode, usage.ru_utime + usage.ru_stime)


def tree_rss(root: int) -> int:
    """Memory of `root` and its descendants, from /proc: the sum of their proportional set
    sizes (a page shared by the scan and the workers it forked counts once in all), or of
    their resident sizes where smaps_rollup is not readable; 0 without /proc."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _pss(pid) or _rss(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                stack.extend(int(child) for child in handle.read().split())
        except OSError:
            pass
    return total


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def summary(runs: list[Run]) -> str:
    times = [r.seconds for r in runs]
    return (
        f"median {statistics.median(times):7.2f} s  (min {min(times):.2f}, max {max(times):.2f})"
        f"  peak {max(r.peak_mb for r in runs):6.0f} MB"
    )


def median(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def settle() -> None:
    """Wait until a file written now has a stamp the cache trusts (`SETTLE_SECONDS`).

    A commit comes seconds or minutes after the edit, so the hook a user runs finds the edited
    file settled, and stores its outcome for the next run (the stamps and the listing by code,
    `idxcheck.scan`'s warm paths); a file written in the same second is read in full again next
    time and stores nothing. The hooks below are timed as a commit finds them: settled."""
    from idxcheck.incremental.stamps import SETTLE_SECONDS

    time.sleep(SETTLE_SECONDS + 0.2)


def idxcheck(*args: str) -> list[str]:
    return [sys.executable, "-m", "idxcheck", *args]


def ruff(*args: str) -> list[str]:
    return [sys.executable, "-m", "ruff", "check", "--select", "E9,F", "--quiet", *args]


def compile_idxcheck() -> None:
    """Byte-compile idxcheck as `pip install` does: an editable checkout run with
    PYTHONDONTWRITEBYTECODE would otherwise compile its edited modules in every timed run."""
    for name in ("idxcheck", "idxcheck.rules"):
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(location, quiet=1)


def count_files(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.py"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--project", choices=sorted(PROJECTS), default="sglang")
    parser.add_argument("--version", help="the release (default: 0.5.23 or 0.33.0)")
    parser.add_argument("--runs", type=int, default=3)
    # Warm runs take a fraction of a second and vary by tens of milliseconds: more of them.
    parser.add_argument("--warm-runs", type=int, default=15)
    # Each hook takes a second or less: more of them, so that one slow run does not decide.
    parser.add_argument("--hook-runs", type=int, default=7)
    parser.add_argument("--skip-growth", action="store_true")
    options = parser.parse_args()
    project_of = PROJECTS[options.project]
    version = options.version or project_of.default_version
    tree = project_of.download(version)
    package = tree.name
    backend, renamed = project_of.backend, project_of.renamed
    facts_backend, facts_renamed = project_of.facts_target(tree)
    stem = renamed.removesuffix("(")
    facts_stem = facts_renamed.removesuffix("(")
    runs = options.runs
    hook_runs = options.hook_runs
    compile_idxcheck()
    print(f"# {options.project} {version}: {count_files(tree)} files, {tree}")
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {runs} runs each ({options.warm_runs} warm,"
        f" {hook_runs} of each hook),"
        " alternating"
    )

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        env = dict(os.environ, IDXCHECK_CACHE_DIR=str(base / "idxcheck-cache"))
        ruff_cache = str(base / "ruff-cache")

        cold_i: list[Run] = []
        cold_r: list[Run] = []
        first_i: list[Run] = []
        for run in range(runs):
            cold_i.append(measure(idxcheck("scan", "--no-cache", str(tree)), env=env))
            cold_r.append(measure(ruff("--no-cache", str(tree))))
            empty = dict(env, IDXCHECK_CACHE_DIR=str(base / f"empty-cache-{run}"))
            first_i.append(measure(idxcheck("scan", str(tree)), env=empty))
        print(f"cold   idxcheck {summary(cold_i)}")
        print(f"cold   ruff     {summary(cold_r)}")
        print(f"first  idxcheck {summary(first_i)}  (an empty cache, filled as it goes)")

        measure(idxcheck("scan", str(tree)), env=env)  # populate
        measure(ruff("--cache-dir", ruff_cache, str(tree)))
        warm_i: list[Run] = []
        warm_r: list[Run] = []
        for _ in range(options.warm_runs):
            warm_i.append(measure(idxcheck("scan", str(tree)), env=env))
            warm_r.append(measure(ruff("--cache-dir", ruff_cache, str(tree))))
        print(f"warm   idxcheck {summary(warm_i)}")
        print(f"warm   ruff     {summary(warm_r)}")

        project = base / "project"
        shutil.copytree(tree, project / package)
        (project / "pyproject.toml").write_text("[tool.idxcheck]\n")
        # A checkout's files are older than the 2 s within which a file's stamp is not
        # trusted (`idxcheck.incremental.stamps`); a copy made just now would be read in full again by
        # the first measured run, which the first commit's run is there to spare it.
        time.sleep(2.5)
        changed = project / package / backend
        hook = idxcheck("scan", "--changed-only", str(Path(package) / backend))
        measure(hook, cwd=project, env=env)  # the first commit fills the cache
        pre: list[Run] = []
        for run in range(hook_runs):
            with changed.open("a") as handle:
                handle.write(f"# edit {run}\n")
            settle()
            pre.append(measure(hook, cwd=project, env=env))
        print(f"hook   idxcheck {summary(pre)}  (one backend changed: a comment appended)")
        edited: list[Run] = []
        original = changed.read_text()
        assert renamed in original, f"{renamed} not in {backend}"
        for run in range(hook_runs):
            # A name not used before, so that no cached result of an earlier run answers.
            changed.write_text(original.replace(renamed, f"{stem}_{run}(", 1))
            settle()
            edited.append(measure(hook, cwd=project, env=env))
        print(f"hook   idxcheck {summary(edited)}  (one backend changed: a method renamed)")
        # The same edit timed as soon as it is written: what a hook finds where the commit
        # rewrote the file just before (pre-commit stashing unstaged changes), or what this
        # bench timed before 2026-12-06. Such a run stores nothing for the next one.
        fresh: list[Run] = []
        for run in range(hook_runs):
            changed.write_text(original.replace(renamed, f"{stem}_n{run}(", 1))
            fresh.append(measure(hook, cwd=project, env=env))
        print(f"hook   idxcheck {summary(fresh)}  (the same, timed as soon as it is written)")
        changed.write_text(original)
        facts_file = project / package / facts_backend
        facts_hook = idxcheck("scan", "--changed-only", str(Path(package) / facts_backend))
        facts_original = facts_file.read_text()
        assert facts_renamed in facts_original, f"{facts_renamed} not in {facts_backend}"
        # Its first run analyses every file whose analysis the cache does not hold yet (the
        # runs above analysed only the files they focused on): a first commit's cost.
        facts_file.write_text(facts_original.replace(facts_renamed, f"{facts_stem}_first(", 1))
        settle()
        measure(facts_hook, cwd=project, env=env)
        facts_edited: list[Run] = []
        for run in range(hook_runs):
            facts_file.write_text(facts_original.replace(facts_renamed, f"{facts_stem}_f{run}(", 1))
            settle()
            facts_edited.append(measure(facts_hook, cwd=project, env=env))
        facts_file.write_text(facts_original)
        print(
            f"hook   idxcheck {summary(facts_edited)}"
            "  (one file the tree facts read changed: a method renamed)"
        )
        # The same edit, then a scan of the whole tree (a CI job or `idxcheck scan sglang`
        # after an edit): no target, but it shows what the cache of each file's analysis saves.
        whole = idxcheck("scan", package)
        changed.write_text(original)
        measure(whole, cwd=project, env=env)  # the last whole-tree scan, as a CI job keeps
        rescans: list[Run] = []
        for run in range(runs):
            changed.write_text(original.replace(renamed, f"{stem}_w{run}(", 1))
            settle()
            rescans.append(measure(whole, cwd=project, env=env))
        changed.write_text(original)
        print(f"rescan idxcheck {summary(rescans)}  (whole tree, one backend's method renamed)")

        print()
        ratio_cold = median(cold_i) / median(cold_r)
        ratio_warm = median(warm_i) / median(warm_r)
        peak = max(r.peak_mb for r in cold_i)
        for text, holds in (
            (f"cold <= 2 x ruff cold: {ratio_cold:.1f} x", ratio_cold <= 2),
            (f"warm <= ruff warm: {ratio_warm:.1f} x", ratio_warm <= 1),
            (f"hook < 0.5 s (comment): {median(pre):.2f} s", median(pre) < 0.5),
            (f"hook < 0.5 s (method): {median(edited):.2f} s", median(edited) < 0.5),
            (
                f"hook < 0.5 s (method, facts backend): {median(facts_edited):.2f} s",
                median(facts_edited) < 0.5,
            ),
            (f"cold peak memory < 500 MB: {peak:.0f} MB", peak < 500),
        ):
            print(f"{'holds ' if holds else 'MISSED'} {text}")

        if not options.skip_growth:
            print()
            print("growth: one cold run per nested subset")
            for subset in project_of.subsets:
                folder = tree / subset
                run_i = measure(idxcheck("scan", "--no-cache", str(folder)), env=env)
                run_r = measure(ruff("--no-cache", str(folder)))
                print(
                    f"  {subset:22} {count_files(folder):5} files  idxcheck {run_i.seconds:6.2f} s"
                    f"  ruff {run_r.seconds:5.2f} s"
                )


if __name__ == "__main__":
    main()
