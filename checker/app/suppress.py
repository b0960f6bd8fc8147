"""The suppression step of the reporting policy: findings split into kept and suppressed, and bare and unused comments reported."""

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

    `enabled`: the codes this scan checks (None: all of `known`), so that a comment for a rule
    the user switched off is not called unused."""
    by_path = {c.path: c for c in comments}
    used: set[tuple[Suppression, str]] = set()
    kept: list[Finding] = []
    suppressed: list[tuple[Finding, Suppression]] = []
    for finding in findings:
        file = by_path.get(finding.span.path)
        hit: Suppression | None = None
        if file is not None and file.suppressions:
            lines = file.lines_for(finding.span.line)
            for suppression in file.suppressions:
                if suppression.line in lines and finding.code in suppression.codes:
                    hit = suppression
                    break
        if hit is None:
            kept.append(finding)
        else:
            used.add((hit, finding.code))
            suppressed.append((finding, hit))
    meta: list[Finding] = []
    active = known if enabled is None else enabled
    for file in by_path.values():
        for suppression in file.suppressions:
            if not suppression.codes:
                if BARE_SUPPRESSION.code in active:
                    meta.append(_meta(BARE_SUPPRESSION, suppression, BARE_SUPPRESSION.message))
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
                else:
                    message = UNUSED_SUPPRESSION.message.format(code=code)
                meta.append(_meta(UNUSED_SUPPRESSION, suppression, message, code))
    meta.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.message))
    return Applied(tuple(kept), tuple(suppressed), tuple(meta))


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
