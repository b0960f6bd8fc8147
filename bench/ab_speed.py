"""Two versions of idxcheck side by side in one run: the cold scan, the warm scan and the three
pre-commit timings of `bench.speed` on a whole SGLang or vLLM release, alternating the versions
run by run so that both see the same machine state.

    python -m bench.ab_speed BEFORE [AFTER] [--project sglang|vllm] [--version V] [--runs 5]
        [--warm-runs 11] [--hook-runs N] [--hooks-only]

BEFORE and AFTER are git refs (AFTER defaults to the working tree); each is imported from a
checkout of its own (`bench.checkout`) with its own cache folder and its own copy of the tree
for the hooks. Prints each version's medians and AFTER / BEFORE. `--hook-runs` (default: `--runs`)
counts the pre-commit rounds; `--hooks-only` times the pre-commit runs alone (a change that acts
only on them).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench.checkout import imported_from, package_at
from bench.speed import PROJECTS, Project, Run, count_files, measure, settle

KINDS = ("cold", "warm", "hook: comment", "hook: method", "hook: facts backend")


@dataclass
class Version:
    name: str
    python_path: Path
    base: Path
    runs: dict[str, list[Run]] = field(default_factory=lambda: {k: [] for k in KINDS})

    @property
    def env(self) -> dict[str, str]:
        return dict(
            os.environ,
            PYTHONPATH=str(self.python_path),
            IDXCHECK_CACHE_DIR=str(self.base / "cache"),
        )

    @property
    def project(self) -> Path:
        return self.base / "project"


def scan(*args: str) -> list[str]:
    return [sys.executable, "-m", "idxcheck", "scan", *args]


def prepare(version: Version, tree: Path) -> None:
    """Its cache filled by a whole-tree scan, its copy of the tree for the hooks committed once."""
    version.base.mkdir(parents=True)
    measure(scan(str(tree)), env=version.env)
    shutil.copytree(tree, version.project / tree.name)
    (version.project / "pyproject.toml").write_text("[tool.idxcheck]\n")


def hooks(version: Version, run: int, edits: Project, package: str) -> None:
    """The three pre-commit runs of `bench.speed`, each edit new to the cache."""
    project, env = version.project, version.env
    stem, facts_stem = edits.renamed.removesuffix("("), edits.facts_renamed.removesuffix("(")
    for kind, path, edit in (
        ("hook: comment", edits.backend, lambda text: text + f"# edit {run}\n"),
        (
            "hook: method",
            edits.backend,
            lambda text: text.replace(edits.renamed, f"{stem}_{run}(", 1),
        ),
        (
            "hook: facts backend",
            edits.facts_file,
            lambda text: text.replace(edits.facts_renamed, f"{facts_stem}_f{run}(", 1),
        ),
    ):
        target = project / package / path
        original = target.read_text()
        target.write_text(edit(original))
        settle()  # as a commit finds the edit (`bench.speed.settle`)
        hook = scan("--changed-only", str(Path(package) / path))
        version.runs[kind].append(measure(hook, cwd=project, env=env))
        target.write_text(original)


def alternate(versions: list[Version], times: int, step: Callable[[Version, int], None]) -> None:
    for run in range(times):
        order = versions if run % 2 == 0 else versions[::-1]
        for version in order:
            step(version, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--project", choices=sorted(PROJECTS), default="sglang")
    parser.add_argument("--version", help="the release (default: 0.5.23 or 0.33.0)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm-runs", type=int, default=11)
    parser.add_argument("--hook-runs", type=int, help="pre-commit rounds (default: --runs)")
    parser.add_argument("--hooks-only", action="store_true", help="no cold or warm scans")
    options = parser.parse_args()
    edits = PROJECTS[options.project]
    release = options.version or edits.default_version
    tree = edits.download(release)
    print(f"# {options.project} {release}: {count_files(tree)} files")
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {options.before} against {options.after or 'the working tree'}"
    )
    with ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        versions = []
        for name, ref in (("before", options.before), ("after", options.after)):
            path = stack.enter_context(package_at(ref))
            assert imported_from(path, sys.executable).startswith(str(path))
            versions.append(Version(name, path, Path(scratch) / name))
        for version in versions:
            prepare(version, tree)
        # A checkout's files are older than the time within which a stamp is not trusted.
        time.sleep(2.5)

        def hook_runs(version: Version, run: int) -> None:
            hooks(version, run, edits, tree.name)

        for version in versions:
            hook_runs(version, 1000)  # the first commit fills each cache
            for kind in KINDS:
                version.runs[kind].clear()

        def cold(version: Version, run: int) -> None:
            version.runs["cold"].append(measure(scan("--no-cache", str(tree)), env=version.env))

        def warm(version: Version, run: int) -> None:
            version.runs["warm"].append(measure(scan(str(tree)), env=version.env))

        if not options.hooks_only:
            alternate(versions, options.runs, cold)
            alternate(versions, options.warm_runs, warm)
        alternate(versions, options.hook_runs or options.runs, hook_runs)
        before, after = versions
        print(f"{'':22} {'before':>9} {'after':>9}  after/before  (wall; CPU)")
        for kind in KINDS:
            if not before.runs[kind]:
                continue
            a = statistics.median(r.seconds for r in before.runs[kind])
            b = statistics.median(r.seconds for r in after.runs[kind])
            ca = statistics.median(r.cpu_seconds for r in before.runs[kind])
            cb = statistics.median(r.cpu_seconds for r in after.runs[kind])
            print(
                f"{kind:22} {a:8.2f}s {b:8.2f}s  {b / a:6.3f}"
                f"   CPU {ca:7.2f}s {cb:7.2f}s  {cb / ca:6.3f}"
            )


if __name__ == "__main__":
    main()
