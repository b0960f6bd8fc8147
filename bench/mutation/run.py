"""Mutation check against real code: how many width mutants of real SGLang attention backends
does idxcheck flag?

    python -m bench.mutation.run                          # 0.5.13, the default backends
    python -m bench.mutation.run --version 0.5.13 --backend srt/layers/attention/triton_backend.py
    python -m bench.mutation.run --json mutants.json      # every mutant and its outcome
    python -m bench.mutation.run --tree fixtures --backend correct/eagle_full_fix.py

Each mutant (bench/mutation/mutate.py) is scanned in a copy of the whole release tree, as a
user scans it: the first scan fills a cache, and each mutant's scan analyses again what its
edit touches (the mutated file and whatever read it), as a pre-commit run does. A
mutant is *flagged* when the scan reports a finding that the unmutated scan does not (by
fingerprint), in the mutated file. Mutants at a site that idxcheck already flags before
mutation are counted apart: they say nothing about detection.

The score is flagged / exposable, where exposable mutants are those that some configuration of
the domain makes wrong where the original is right (decided by bench/mutation/mutate.py,
independently of idxcheck). A mutant that idxcheck reports although it is not exposable (a
warning of IDX006 about a grid scalar wider than its pointer's stride) is counted with the
equivalent ones, never as found. Each missed mutant is listed with what idxcheck says at the
mutated site."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.mutation.mutate import Mutant, mutants
from bench.sglang_tree import sglang_tree
from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult

DEFAULT_BACKENDS = (
    "srt/layers/attention/triton_backend.py",
    "srt/layers/attention/flashattention_backend.py",
    "srt/layers/attention/flashinfer_backend.py",
    "srt/layers/attention/trtllm_mha_backend.py",
)


@dataclass
class Outcome:
    backend: str
    function: str
    line: int
    kind: str
    operator: str
    description: str
    exposable: bool | None
    # flagged | missed | equivalent | flagged-equivalent | already-flagged | error
    status: str
    reason: str = ""
    findings: list[str] = field(default_factory=list)


def _fingerprints(result: ScanResult, path: str) -> set[str]:
    return {f.fingerprint for f in result.findings if f.span.path == path}


def _site_lines(result: ScanResult, path: str, lines: range) -> list[str]:
    """What the scan says at the mutated site: its non-proved verdicts and their reasons."""
    said = sorted(
        {
            f"{o.code} {o.mode} {o.verdict.name}" + (f": {o.reason}" if o.reason else "")
            for o in result.outcomes
            if o.span.path == path and o.span.line in lines
        }
    )
    return said


def run_backend(
    tree: Path, work: Path, backend: str, limit: int | None, config: Config
) -> list[Outcome]:
    target = work / backend
    original = (tree / backend).read_text(encoding="utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(original, encoding="utf-8")
    path = str(target)
    baseline = scan([str(work)], config)
    base_prints = _fingerprints(baseline, path)
    flagged_lines = {
        line
        for f in baseline.findings
        if f.span.path == path
        for line in [
            f.span.line,
            *(r.span.line for r in f.related if r.span and r.span.path == path),
        ]
    }
    found: list[Mutant] = mutants(original)
    if limit is not None:
        found = found[:limit]
    out: list[Outcome] = []
    for mutant in found:
        site = mutant.site
        lines = range(site.start_line, site.end_line + 1)
        record = Outcome(
            backend,
            site.function,
            site.line,
            site.kind,
            mutant.operator,
            mutant.description,
            mutant.exposable,
            "missed",
        )
        target.write_text(mutant.source, encoding="utf-8")
        try:
            result = scan([str(work)], config)
        finally:
            target.write_text(original, encoding="utf-8")
        errors = [e.message for e in result.errors if e.path == path]
        new = [
            f for f in result.findings if f.span.path == path and f.fingerprint not in base_prints
        ]
        record.findings = [f"{f.code} {f.mode} line {f.span.line}: {f.message}" for f in new]
        if errors:
            record.status, record.reason = "error", "; ".join(errors)
        elif any(line in flagged_lines for line in lines):
            record.status = "already-flagged"
        elif new and mutant.exposable is False:
            # No configuration makes the mutant wrong where the original is right, yet a rule
            # reports it (IDX006 warns of a grid scalar wider than its pointer's stride, which
            # wastes a row): counted apart, never as an exposable mutant found.
            record.status = "flagged-equivalent"
        elif new:
            record.status = "flagged"
        elif mutant.exposable is False:
            record.status = "equivalent"
        else:
            said = _site_lines(result, path, lines)
            if not said:
                # The obligation sits where the value is handed over (a later line).
                said = [
                    f"in {site.function}: {v}"
                    for v in sorted(
                        {
                            f"{o.code} {o.mode} {o.verdict.name}"
                            + (f": {o.reason}" if o.reason else "")
                            for o in result.outcomes
                            if o.span.path == path and o.function == site.function
                        }
                    )
                ]
            record.reason = "; ".join(said) if said else f"no obligation in {site.function}"
        out.append(record)
    return out


def summarise(outcomes: Sequence[Outcome]) -> str:
    counts = Counter(o.status for o in outcomes)
    counts["equivalent"] += counts["flagged-equivalent"]
    exposable = counts["flagged"] + counts["missed"]
    lines = [
        f"mutants: {len(outcomes)} (at sites idxcheck already flags: {counts['already-flagged']}, "
        f"equivalent: {counts['equivalent']}, of them reported all the same: "
        f"{counts['flagged-equivalent']}, scan errors: {counts['error']})",
        f"exposable: {exposable}, flagged: {counts['flagged']}, missed: {counts['missed']}"
        + (f", score {counts['flagged'] / exposable:.1%}" if exposable else ""),
    ]
    by_backend: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_backend.setdefault(o.backend, Counter())[o.status] += 1
    for backend, c in by_backend.items():
        lines.append(
            f"  {backend}: flagged {c['flagged']} / exposable {c['flagged'] + c['missed']} "
            f"(already flagged {c['already-flagged']}, equivalent {c['equivalent']}, errors {c['error']})"
        )
    by_operator: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_operator.setdefault(o.operator, Counter())[o.status] += 1
    for operator, c in sorted(by_operator.items()):
        lines.append(
            f"  {operator}: flagged {c['flagged']} / exposable {c['flagged'] + c['missed']}"
        )
    missed = [o for o in outcomes if o.status in ("missed", "error")]
    if missed:
        lines.append("missed:")
        for o in missed:
            lines.append(
                f"  {o.backend}:{o.line} {o.function} [{o.kind} {o.operator}] {o.description}"
            )
            lines.append(f"    idxcheck: {o.reason}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.5.13")
    parser.add_argument(
        "--tree", help="a source folder to mutate instead of the release (backends relative to it)"
    )
    parser.add_argument(
        "--backend", action="append", help="path inside the sglang package (repeatable)"
    )
    parser.add_argument("--limit", type=int, help="at most this many mutants per backend")
    parser.add_argument("--json", help="write every mutant's outcome here")
    parser.add_argument(
        "--context",
        choices=["tree", "none"],
        default="tree",
        help="tree: each mutant scanned in the whole release tree (default); "
        "none: each backend alone (the profile's default widths and mode model)",
    )
    args = parser.parse_args(argv)
    tree = Path(args.tree) if args.tree else sglang_tree(args.version)
    backends = args.backend or list(DEFAULT_BACKENDS)
    started = time.perf_counter()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="idxcheck-mutation-") as tmp:
        work = Path(tmp) / "sglang"
        if args.context == "tree":
            shutil.copytree(tree, work, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            work.mkdir()
        # The cache makes each mutant's scan of the whole tree analyse again only what the
        # edit touches; a cached scan reports what a scan without the cache does.
        config = Config(cache_dir=str(Path(tmp) / "cache"))
        for backend in backends:
            saved = (
                (work / backend).read_text(encoding="utf-8") if (work / backend).exists() else None
            )
            outcomes += run_backend(tree, work, backend, args.limit, config)
            if saved is None:
                (work / backend).unlink()  # each backend is scanned alone
    elapsed = time.perf_counter() - started
    name = args.tree or f"sglang {args.version}"
    print(f"{name}, {len(backends)} backends, context {args.context}, {elapsed:.0f} s")
    print(summarise(outcomes))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
