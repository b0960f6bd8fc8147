"""Adopting idxcheck on code that already has findings.

`--write-baseline FILE` records the fingerprints of today's findings; `--baseline FILE` then
reports only findings that are not in it. Fingerprints name the rule, the function, the mode and
the normalised claim, not the line, so a baseline survives edits above a finding. Matching counts
occurrences: two identical findings in the baseline cover two, not three.

`--diff-base REF` needs no file: the same paths are scanned as they were at a git ref (exported
into a temporary folder, named as the work tree's files), and only findings whose fingerprint is
not found there are reported, which is what a pull request's lint job wants."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from idxcheck import __version__
from idxcheck.app import gitutil
from idxcheck.app.config_file import common_folder
from idxcheck.app.outfile import write_text
from idxcheck.model.config import Config
from idxcheck.model.findings import Finding
from idxcheck.model.outcome import Scan
from idxcheck.report.escape import unicode_safe
from idxcheck.source.pathmatch import relative_posix

BASELINE_VERSION = "1"
# Entries of a `--diff-base` ref left out that are named one by one; the rest are counted.
MAX_NOTES = 20


class BaselineError(Exception):
    pass


@dataclass(frozen=True)
class Split:
    new: tuple[Finding, ...]
    known: tuple[Finding, ...]  # matched by the baseline (or present at the diff base)
    stale: int  # baseline entries that matched nothing: fixed since, or the code moved


def write_baseline(path: str, findings: Iterable[Finding]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    entries = [
        {
            "fingerprint": f.fingerprint,
            "code": f.code,
            "path": relative_posix(f.span.path, folder),
            "function": f.function,
            "mode": f.mode,
            "message": f.message,
        }
        for f in findings
    ]
    # No line numbers and a stable order: the file changes only when the findings do.
    entries.sort(key=lambda e: (e["path"], e["code"], e["function"], e["mode"], e["fingerprint"]))
    doc = {
        "version": BASELINE_VERSION,
        "tool": {"name": "idxcheck", "version": __version__},
        "findings": entries,
    }
    # Written whole or not at all (`outfile.OutputError` says why); a name that is not UTF-8
    # is shown escaped, as in the JSON report (matching reads only the fingerprints).
    write_text(path, json.dumps(unicode_safe(doc), indent=2) + "\n")


def load_baseline(path: str) -> Counter[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            doc: Any = json.load(handle)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path}: not an idxcheck baseline (no findings list)")
    counts: Counter[str] = Counter()
    for entry in doc["findings"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise BaselineError(f"{path}: a baseline entry without a fingerprint: {entry!r}")
        counts[entry["fingerprint"]] += 1
    return counts


def split(findings: Sequence[Finding], known: Counter[str]) -> Split:
    left = Counter(known)
    new: list[Finding] = []
    old: list[Finding] = []
    for finding in findings:
        if left[finding.fingerprint] > 0:
            left[finding.fingerprint] -= 1
            old.append(finding)
        else:
            new.append(finding)
    return Split(tuple(new), tuple(old), sum(left.values()))


def findings_at_ref(
    ref: str,
    paths: Sequence[str],
    config: Config,
    scan: Callable[[Sequence[str], Config], Scan],
    warn: Callable[[str], None] = lambda _message: None,
) -> Counter[str]:
    """Fingerprints of what the same scan reports on the files of git `ref`: written into a
    temporary folder (`gitutil.export_linked`) and displayed under the names the work tree's
    files have (`Config.shown_as`), so that each file the ref and the work tree hold alike is
    named and read alike, and its cached analysis serves both scans. `scan` is the scan with the
    policy the work tree's scan has. The entries of the ref that the export leaves out (they
    would land outside its folder) are passed to `warn`, a line each (at most `MAX_NOTES`)."""
    start = common_folder(paths)
    top = gitutil.toplevel(start)
    if top is None:
        raise gitutil.GitError(f"--diff-base needs a git repository; {start} is not in one")
    commit = gitutil.resolve_commit(top, ref)
    rels = [os.path.relpath(os.path.realpath(p), top) for p in paths]
    if any(r.startswith("..") for r in rels):
        raise gitutil.GitError(f"--diff-base: every scanned path must be inside {top}")
    present = [
        (p, r) for p, r in zip(paths, rels, strict=True) if gitutil.exists_at(top, commit, r)
    ]
    if not present:
        return Counter()  # the paths are new since the ref: everything is new
    with tempfile.TemporaryDirectory(prefix="idxcheck-base-") as folder:
        notes = gitutil.export_linked(top, commit, [r for _, r in present], folder)
        for note in notes[:MAX_NOTES]:
            warn(f"--diff-base {ref}: left out {note}")
        if len(notes) > MAX_NOTES:
            warn(f"--diff-base {ref}: left out {len(notes) - MAX_NOTES} more entries")
        # The unchanged files are links to the work tree's, which the walk may follow.
        shown = tuple(p for p, _ in present)
        base_config = replace(config, shown_as=shown, link_roots=shown)
        outcome = scan([os.path.join(folder, r) for _, r in present], base_config)
        return Counter(f.fingerprint for f in outcome.result.findings)
