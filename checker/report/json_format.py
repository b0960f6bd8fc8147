"""The JSON report: the contract other tools read. Fields are only ever added.

Every string is valid Unicode: a name with bytes that are not UTF-8 is shown with them escaped
(`bad\\xff.py`, as the other reports show it), and `path_uri` beside it keeps its bytes,
percent-encoded as SARIF's URIs are (`bad%FF.py`)."""

from __future__ import annotations

import json
from typing import Any

from idxcheck import __version__
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report.context import Report, as_report
from idxcheck.report.detail import launch_dict
from idxcheck.report.escape import path_fields, unicode_safe

SCHEMA_VERSION = "1"


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    span = finding.span
    out: dict[str, Any] = {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity,
        **path_fields(span.path),
        "line": span.line,
        "column": span.column + 1,
        "end_line": span.end_line,
        "end_column": span.end_column + 1,
        "function": finding.function,
        "mode": finding.mode,
        "message": finding.message,
        "verdict": finding.verdict.name,
        "counterexample": dict(finding.counterexample),
        "needs": finding.needs_text,
        "conditions": [{"condition": text, "value": value} for text, value in finding.conditions],
        "related": [
            {
                **path_fields(r.file or None),
                "line": r.span.line if r.span else None,
                "role": r.role,
                "message": r.message,
            }
            for r in finding.related
        ],
        "explain": list(finding.explain),
        "fingerprint": finding.fingerprint,
        "replay": finding.replay.to_dict() if finding.replay is not None else None,
    }
    out["launch"] = launch_dict(finding.launch)
    fix = finding.fix
    out["fix"] = (
        {
            "description": fix.description,
            "original": fix.original,
            "replacement": fix.replacement,
        }
        if fix is not None
        else None
    )
    if finding.confirmation is not None:
        out["confirmation"] = finding.confirmation
    return out


def to_dict(result: ScanResult | Report) -> dict[str, Any]:
    report = as_report(result)
    result = report.result
    stats = result.stats
    doc: dict[str, Any] = {
        "version": SCHEMA_VERSION,
        "tool": {"name": "idxcheck", "version": __version__},
        "findings": [finding_to_dict(f) for f in result.findings],
        "sites": [
            {
                "code": n.code,
                **path_fields(n.span.path),
                "line": n.span.line,
                "column": n.span.column + 1,
                "function": n.function,
                "mode": n.mode,
                "verdict": n.verdict.name,
                "reason": n.reason,
            }
            for n in result.notes
        ],
        "errors": [{**path_fields(e.path), "message": e.message} for e in result.errors],
        "stats": {
            "files": stats.files,
            "parsed": stats.parsed,
            "sites": stats.sites,
            "obligations": stats.obligations,
            "proved": stats.proved,
            "refuted": stats.refuted,
            "unknown": stats.unknown,
            "unsupported": stats.unsupported,
            "unreachable": stats.unreachable,
            "seconds": stats.seconds,
        },
        "mode_model": result.mode_model_source,
        # The forward modes compared with the profile's default width, for want of their
        # runner among the scanned files (the text report's notes).
        "profile_defaults": [
            {"profile": use.profile, "mode": use.mode, "width": use.width}
            for use in result.profile_widths
        ],
        # Added with the reporting policy (suppressions, baselines); absent keys read as empty.
        "suppressed": [
            {
                "code": finding.code,
                **path_fields(finding.span.path),
                "line": finding.span.line,
                "fingerprint": finding.fingerprint,
                "comment_line": comment.line,
                "reason": comment.reason,
            }
            for finding, comment in report.suppressed
        ],
        "baselined": len(report.baselined),
        "exit_code": report.exit_code,
    }
    return unicode_safe(doc)  # type: ignore[no-any-return]


def render(result: ScanResult | Report) -> str:
    return json.dumps(to_dict(result), indent=2, sort_keys=False) + "\n"
