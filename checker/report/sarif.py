"""SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

- rule metadata (`tool.driver.rules`) comes from the rule docs, the same text as `idxcheck rule`:
  `help.markdown` the doc, `help.text` the same as plain text, `helpUri` the rule's page
  (`docs/rules/CODE.md`) under the report's docs address (`idxcheck.app.docs_url`), none where
  no address is known;
- `partialFingerprints` carry the finding's line-independent fingerprint (rule, function, mode,
  normalised claim), numbered among identical ones in the same file, so alerts survive edits
  above them and reformatting;
- `relatedLocations` are the finding's related spans, and a `codeFlows` thread flow walks the
  chain backend site -> runner width -> kernel grid;
- the counterexample, what it needs, the path conditions, the replay block and the runtime
  confirmation go in `properties`;
- suppressed findings appear with an `inSource` suppression, so viewers show them as such;
- `invocations` record the exit code and the per-file errors.

URIs are percent-encoded from the bytes of the names, and text that is not valid Unicode (a
name's undecodable bytes) is shown `\\xNN`, so the document is valid with its formats checked.

Positions: libcst gives 1-based lines and 0-based code-point columns with an exclusive end;
SARIF wants 1-based columns, so both ends shift by one and `columnKind` says code points."""

from __future__ import annotations

import inspect
import json
import os
import re
from collections import Counter
from typing import Any
from urllib.parse import quote

from idxcheck import __version__
from idxcheck.model.findings import Finding, Related, ScanResult
from idxcheck.model.spans import Span
from idxcheck.report.context import EXIT_DESCRIPTIONS, Report, as_report
from idxcheck.report.detail import launch_dict
from idxcheck.report.escape import unicode_safe, uri
from idxcheck.rules.catalog import RuleInfo, catalogue

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT_KEY = "idxcheck/v1"
# Where a related location sits in the chain the code flow walks.
_FLOW_STEP = {
    "binding": 0,
    "layout": 0,
    "entry": 0,
    "runner": 1,
    "profile": 1,
    "kernel": 2,
    "grid": 2,
}
_STEP_NAMES = ("backend site", "runner width", "kernel grid")


def _uri(path: str) -> dict[str, str]:
    # Percent-encoded from the name's bytes (`escape.uri`): a valid URI reference that gives
    # back the exact name, whatever it holds.
    if os.path.isabs(path):
        return {"uri": uri(path)}
    # Relative to the checkout root, which GitHub and other viewers resolve for %SRCROOT%.
    return {"uri": uri(path), "uriBaseId": "%SRCROOT%"}


def _region(span: Span) -> dict[str, int]:
    region = {"startLine": span.line, "startColumn": span.column + 1}
    if span.end_line >= span.line:
        region["endLine"] = span.end_line
        if span.end_line > span.line or span.end_column > span.column:
            region["endColumn"] = span.end_column + 1
    return region


def _physical(span: Span) -> dict[str, Any]:
    return {"artifactLocation": _uri(span.path), "region": _region(span)}


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_EMPHASIS = re.compile(r"(?<![*\w])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![*\w])", re.DOTALL)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!])")
_HELD = re.compile("\ue000(\\d+)\ue001")  # a code span held out of the prose's rewriting
_BLANK = re.compile(r"\n[ \t]*\n")


def _plain_inline(text: str) -> str:
    """A paragraph without its inline marks. Code spans and escaped characters are literal
    (their stars and backslashes are text), so they are held out while emphasis and links go."""
    held: list[str] = []

    def hold(span: re.Match[str]) -> str:
        code = span.group(2)
        held.append(code[1:-1] if code.startswith(" ") and code.endswith(" ") else code)
        return f"\ue000{len(held) - 1}\ue001"

    def hold_escaped(escape: re.Match[str]) -> str:
        held.append(escape.group(1))
        return f"\ue000{len(held) - 1}\ue001"

    text = _CODE_SPAN.sub(hold, text)
    text = _ESCAPED.sub(hold_escaped, text)  # an escaped mark is text, not a mark
    text = _LINK.sub(r"\1 (\2)", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _HELD.sub(lambda m: held[int(m.group(1))], text)


def plain_text(markdown: str) -> str:
    """A rule doc's markdown as plain text, for viewers that show no markdown: emphasis and
    code marks dropped, links as `text (address)`, indented code blocks kept as they are.
    Inline marks may run over a paragraph's lines, so it goes paragraph by paragraph; an
    indented block cannot interrupt a paragraph, so a block all indented is code."""
    blocks = []
    for block in _BLANK.split(markdown):
        code = all(not ln.strip() or ln.startswith("    ") for ln in block.splitlines())
        blocks.append(block if code else _plain_inline(block))
    return "\n\n".join(blocks)


def rule_page(docs_url: str, code: str) -> str:
    """The address of a rule's page (docs/rules/CODE.md, generated from the rule docs)."""
    return f"{docs_url}/rules/{quote(code)}.md"


def _rule(info: RuleInfo, docs_url: str) -> dict[str, Any]:
    # A docstring keeps the indentation of its source lines (before Python 3.13): the markdown
    # of a doc is its dedented text, else each paragraph would read as a code block.
    doc = inspect.cleandoc(info.doc)
    full = " ".join(doc.split("\n\n", 1)[0].split())
    rule: dict[str, Any] = {
        "id": info.code,
        "name": info.name,
        "shortDescription": _multiformat(info.summary),
        "fullDescription": _multiformat(full),
        "help": {"text": plain_text(doc), "markdown": doc},
    }
    if docs_url:  # SARIF wants an absolute URI (`format: uri`): none rather than a guess
        rule["helpUri"] = rule_page(docs_url, info.code)
    return rule | {
        "defaultConfiguration": {"level": _level(info.severity)},
        "properties": {
            "tags": ["suppression"]
            if info.meta
            else ["correctness", "attention-backend", "cuda-graph"],
            "precision": "very-high",
            "problem.severity": "error" if info.severity == "error" else "warning",
        },
    }


def _multiformat(markdown: str) -> dict[str, str]:
    text = plain_text(markdown)
    return {"text": text} if text == markdown else {"text": text, "markdown": markdown}


def _level(severity: str) -> str:
    return "error" if severity == "error" else "warning"


def _message(finding: Finding) -> str:
    text = finding.message
    if finding.counterexample_text:
        text += f"\ncounterexample: {finding.counterexample_text}"
    if finding.needs_text:
        text += f" (needs {finding.needs_text})"
    if finding.launch is not None:
        text += f"\nlaunch: {finding.launch.command}"
    confirmation = finding.confirmation
    if confirmation:
        text += f"\nconfirmation: {confirmation.get('status')}: {confirmation.get('reason', '')}"
    return text


def _related_location(index: int, related: Related) -> dict[str, Any]:
    location: dict[str, Any] = {"id": index, "message": {"text": related.message}}
    if related.span is not None:
        location["physicalLocation"] = _physical(related.span)
    elif related.path:
        location["physicalLocation"] = {"artifactLocation": _uri(related.path)}
    return location


def _code_flow(finding: Finding) -> dict[str, Any]:
    steps: list[tuple[int, str, Span | None, str]] = [(0, "site", finding.span, finding.message)]
    for related in finding.related:
        steps.append((_FLOW_STEP.get(related.role, 0), related.role, related.span, related.message))
    steps.sort(key=lambda s: s[0])  # stable: keeps the finding's own order within a step
    locations = []
    for order, (step, role, span, message) in enumerate(steps, start=1):
        location: dict[str, Any] = {"message": {"text": f"{_STEP_NAMES[step]}: {message}"}}
        if span is not None:
            location["physicalLocation"] = _physical(span)
        locations.append({"location": location, "kinds": [role], "executionOrder": order})
    return {
        "message": {"text": "backend site -> runner width -> kernel grid"},
        "threadFlows": [{"locations": locations}],
    }


def _properties(finding: Finding) -> dict[str, Any]:
    props: dict[str, Any] = {"severity": finding.severity, "verdict": finding.verdict.name}
    if finding.mode:
        props["mode"] = finding.mode
    if finding.function:
        props["function"] = finding.function
    if finding.counterexample:
        props["counterexample"] = dict(finding.counterexample)
    if finding.needs_text:
        props["needs"] = finding.needs_text
    if finding.conditions:
        props["conditions"] = [{"condition": t, "value": v} for t, v in finding.conditions]
    if finding.explain:
        props["explain"] = list(finding.explain)
    if finding.replay is not None:
        props["replay"] = finding.replay.to_dict()
    if finding.launch is not None:
        props["launch"] = launch_dict(finding.launch)
    if finding.confirmation is not None:
        props["confirmation"] = finding.confirmation
    return props


def _fixes(finding: Finding) -> list[dict[str, Any]]:
    """The finding's fix as a SARIF fix: one replacement of its expression."""
    fix = finding.fix
    if fix is None:
        return []
    return [
        {
            "description": {"text": f"{fix.description}: replace with `{fix.replacement}`"},
            "artifactChanges": [
                {
                    "artifactLocation": _uri(finding.span.path),
                    "replacements": [
                        {
                            "deletedRegion": _region(finding.span),
                            "insertedContent": {"text": fix.replacement},
                        }
                    ],
                }
            ],
        }
    ]


def _result(finding: Finding, rule_index: dict[str, int], occurrence: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _level(finding.severity),
        "message": {"text": _message(finding)},
        "locations": [
            {
                "physicalLocation": _physical(finding.span),
                **(
                    {
                        "logicalLocations": [
                            {"fullyQualifiedName": finding.function, "kind": "function"}
                        ]
                    }
                    if finding.function
                    else {}
                ),
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: f"{finding.fingerprint}:{occurrence}"},
        "properties": _properties(finding),
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.related:
        result["relatedLocations"] = [
            _related_location(i, r) for i, r in enumerate(finding.related, start=1)
        ]
    if finding.mode:  # meta findings have no chain to walk
        result["codeFlows"] = [_code_flow(finding)]
    fixes = _fixes(finding)
    if fixes:
        result["fixes"] = fixes
    return result


def _occurrences(findings: list[Finding]) -> list[int]:
    """Number identical fingerprints in one file in source order, so each result keeps a
    distinct fingerprint that does not depend on line numbers."""
    seen: Counter[tuple[str, str]] = Counter()
    numbers = [0] * len(findings)
    order = sorted(
        range(len(findings)),
        key=lambda i: (findings[i].span.path, findings[i].span.line, findings[i].span.column),
    )
    for i in order:
        key = (findings[i].span.path, findings[i].fingerprint)
        numbers[i] = seen[key]
        seen[key] += 1
    return numbers


def to_dict(result: ScanResult | Report) -> dict[str, Any]:
    report = as_report(result)
    rules = catalogue()
    rule_index = {info.code: i for i, info in enumerate(rules)}
    stats = report.result.stats
    doc = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "idxcheck",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(info, report.docs_url) for info in rules],
                    }
                },
                "invocations": [_invocation(report)],
                "columnKind": "unicodeCodePoints",
                "results": _results(report, rule_index),
                "properties": {
                    "stats": {
                        "files": stats.files,
                        "sites": stats.sites,
                        "obligations": stats.obligations,
                        "proved": stats.proved,
                        "refuted": stats.refuted,
                        "unknown": stats.unknown,
                        "unsupported": stats.unsupported,
                    },
                    "modeModel": report.result.mode_model_source,
                    "baselined": len(report.baselined),
                },
            }
        ],
    }
    # Text of the tree that is not valid Unicode (a name's undecodable bytes) is shown escaped.
    return unicode_safe(doc)  # type: ignore[no-any-return]


def _results(report: Report, rule_index: dict[str, int]) -> list[dict[str, Any]]:
    """The reported findings, the suppressed ones (with their comments), and under `--strict`
    the UNKNOWN verdicts."""
    reported = list(report.findings)
    suppressed = [finding for finding, _ in report.suppressed]
    numbers = _occurrences(reported + suppressed)
    results = []
    for i, finding in enumerate(reported):
        entry = _result(finding, rule_index, numbers[i])
        if report.baseline_used:
            entry["baselineState"] = "new"
        results.append(entry)
    for j, (finding, comment) in enumerate(report.suppressed):
        entry = _result(finding, rule_index, numbers[len(reported) + j])
        entry["suppressions"] = [
            {
                "kind": "inSource",
                "justification": comment.reason or comment.text,
                "location": {"physicalLocation": _physical(comment.span)},
            }
        ]
        results.append(entry)
    if report.strict:
        for path, line, column, code, mode, reason in report.unknown_notes():
            span = Span(path, line, column, line, column)
            results.append(
                {
                    "ruleId": code,
                    **({"ruleIndex": rule_index[code]} if code in rule_index else {}),
                    # The solver could not decide: neither a pass nor a fail (SARIF "open").
                    "kind": "open",
                    "level": "none",
                    "message": {"text": f"UNKNOWN in {mode}: {reason}"},
                    "locations": [{"physicalLocation": _physical(span)}],
                    "properties": {"mode": mode, "verdict": "UNKNOWN"},
                }
            )
    return results


def _invocation(report: Report) -> dict[str, Any]:
    """How the run ended, with each per-file error as a notification."""
    notifications = [
        {
            "level": "error",
            "message": {"text": error.message},
            "locations": [{"physicalLocation": {"artifactLocation": _uri(error.path)}}],
        }
        for error in report.result.errors
    ]
    invocation: dict[str, Any] = {
        "executionSuccessful": report.exit_code in (0, 1),
        "exitCode": report.exit_code,
        "exitCodeDescription": EXIT_DESCRIPTIONS.get(report.exit_code, "unknown"),
    }
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return invocation


def render(result: ScanResult | Report) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"
