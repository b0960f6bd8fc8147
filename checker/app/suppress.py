"""The suppression step of the reporting policy: findings split into kept and suppressed (by line
and file-level comments), and bare and unused comments reported."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from idxcheck.model.comments import FileComments, Suppression
from idxcheck.model.findings import Finding, make_finding
from idxcheck.rules.meta import BARE_SUPPRESSION, UNUSED_SUPPRESSION, MetaRule

_CODE = re.compile(r"^[A-Z]+[0-9]+$")


@dataclass(frozen=True)
class Applied:
    kept: tuple[Finding, ...]
    suppressed: tuple[tuple[Finding, Suppression], ...]  # each with the comment that matched
    meta: tuple[Finding, ...]


def apply(
    findings: Sequence[Finding],
    comments: Iterable[FileComments],
    *,
    enabled: frozenset[str] | None,
    known: frozenset[str],
) -> Applied:
    """Split `findings` into kept and suppressed, and report bare and unused comments.

    A finding is suppressed by a comment of its code on its line (or its statement's first
    line), else by a file-level comment of its file. The meta findings about line comments
    (bare, unused) are suppressed by the file-level comments too; those about a file-level
    comment by none. `enabled`: the codes this scan checks (None: all of `known`), so that a
    comment for a rule the user switched off is not called unused."""
    by_path = {c.path: c for c in comments}
    used: set[tuple[Suppression, str]] = set()
    kept: list[Finding] = []
    suppressed: list[tuple[Finding, Suppression]] = []

    def split(finding: Finding, line_too: bool) -> None:
        file = by_path.get(finding.span.path)
        hit = _matching(file, finding, line_too) if file is not None else None
        if hit is None:
            kept.append(finding)
        else:
            used.add((hit, finding.code))
            suppressed.append((finding, hit))

    for finding in findings:
        split(finding, line_too=True)
    active = known if enabled is None else enabled
    rule_findings = len(kept)
    for finding in _about_comments(by_path.values(), used, active, known, file_level=False):
        split(finding, line_too=False)
    meta = kept[rule_findings:]
    del kept[rule_findings:]
    meta.extend(_about_comments(by_path.values(), used, active, known, file_level=True))
    meta.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.message))
    return Applied(tuple(kept), tuple(suppressed), tuple(meta))


def _matching(file: FileComments, finding: Finding, line_too: bool) -> Suppression | None:
    """The comment of `file` that suppresses `finding`: one on its lines, else a file-level
    one."""
    if line_too:
        lines = file.lines_for(finding.span.line)
        for suppression in file.line_level:
            if suppression.line in lines and finding.code in suppression.codes:
                return suppression
    for suppression in file.file_level:
        if suppression.matches(finding.code):
            return suppression
    return None


def _about_comments(
    files: Iterable[FileComments],
    used: set[tuple[Suppression, str]],
    active: frozenset[str],
    known: frozenset[str],
    *,
    file_level: bool,
) -> list[Finding]:
    """The meta findings about the line comments (bare ones, unused codes), or about the
    file-level ones (unused codes, a bare one that suppressed nothing)."""
    out: list[Finding] = []
    for file in files:
        for suppression in file.file_level if file_level else file.line_level:
            if not suppression.codes:
                if file_level:
                    if UNUSED_SUPPRESSION.code in active and not any(
                        comment is suppression for comment, _code in used
                    ):
                        message = "unused suppression: no finding in this file"
                        out.append(_meta(UNUSED_SUPPRESSION, suppression, message))
                elif BARE_SUPPRESSION.code in active:
                    out.append(_meta(BARE_SUPPRESSION, suppression, BARE_SUPPRESSION.message))
                continue
            if UNUSED_SUPPRESSION.code not in active:
                continue
            for code in suppression.codes:
                if (suppression, code) in used:
                    continue
                if code not in known or not _CODE.match(code):
                    message = f"unused suppression: {code} is not an idxcheck rule code"
                elif code not in active:
                    continue  # the rule is off in this scan: it could not have matched
                elif file_level:
                    message = f"unused suppression: no {code} finding in this file"
                else:
                    message = UNUSED_SUPPRESSION.message.format(code=code)
                out.append(_meta(UNUSED_SUPPRESSION, suppression, message, code))
    return out


def _meta(rule: MetaRule, suppression: Suppression, message: str, code: str = "") -> Finding:
    # Line-independent like the rule fingerprints: the rule, the comment and the code it names.
    return make_finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        span=suppression.span,
        message=message,
        identity=(rule.code, suppression.text, code),
        explain=(f"comment: `{suppression.text}`",),
    )
