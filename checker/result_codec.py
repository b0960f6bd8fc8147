"""A scan result as plain data and back, for the result cache (exact, unlike the reports)."""

from __future__ import annotations

from typing import Any

from idxcheck.findings import FileError, Finding, Related, ScanResult, SiteNote, Stats
from idxcheck.spans import Span
from idxcheck.verdicts import Verdict


def _span(span: Span | None) -> list[Any] | None:
    return (
        None
        if span is None
        else [span.path, span.line, span.column, span.end_line, span.end_column]
    )


def _unspan(data: list[Any] | None) -> Span | None:
    return None if data is None else Span(data[0], data[1], data[2], data[3], data[4])


def _note(note: SiteNote) -> dict[str, Any]:
    return {
        "code": note.code,
        "span": _span(note.span),
        "function": note.function,
        "mode": note.mode,
        "verdict": note.verdict.name,
        "reason": note.reason,
    }


def _unnote(data: dict[str, Any]) -> SiteNote:
    span = _unspan(data["span"])
    assert span is not None
    return SiteNote(
        data["code"], span, data["function"], data["mode"], Verdict[data["verdict"]], data["reason"]
    )


def finding_to_dict(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity,
        "span": _span(f.span),
        "function": f.function,
        "mode": f.mode,
        "message": f.message,
        "verdict": f.verdict.name,
        "counterexample": f.counterexample,
        "counterexample_text": f.counterexample_text,
        "needs_text": f.needs_text,
        "conditions": [list(c) for c in f.conditions],
        "related": [
            {"role": r.role, "message": r.message, "span": _span(r.span)} for r in f.related
        ],
        "fingerprint": f.fingerprint,
        "explain": list(f.explain),
        "replay": f.replay,
        "confirmation": f.confirmation,
    }


def finding_from_dict(f: dict[str, Any]) -> Finding:
    span = _unspan(f["span"])
    assert span is not None
    return Finding(
        code=f["code"],
        name=f["name"],
        severity=f["severity"],
        span=span,
        function=f["function"],
        mode=f["mode"],
        message=f["message"],
        verdict=Verdict[f["verdict"]],
        counterexample=dict(f["counterexample"]),
        counterexample_text=f["counterexample_text"],
        needs_text=f["needs_text"],
        conditions=tuple((c[0], bool(c[1])) for c in f["conditions"]),
        related=tuple(Related(r["role"], r["message"], _unspan(r["span"])) for r in f["related"]),
        fingerprint=f["fingerprint"],
        explain=tuple(f["explain"]),
        replay=f["replay"],
        confirmation=f["confirmation"],
    )


def result_to_dict(result: ScanResult) -> dict[str, Any]:
    return {
        "findings": [finding_to_dict(f) for f in result.findings],
        "notes": [_note(n) for n in result.notes],
        "outcomes": [_note(n) for n in result.outcomes],
        "errors": [[e.path, e.message] for e in result.errors],
        "stats": dict(result.stats.__dict__),
        "mode_model_source": result.mode_model_source,
        "mode_order": list(result.mode_order),
    }


def result_from_dict(data: dict[str, Any]) -> ScanResult:
    return ScanResult(
        findings=[finding_from_dict(f) for f in data["findings"]],
        notes=[_unnote(n) for n in data["notes"]],
        outcomes=[_unnote(n) for n in data["outcomes"]],
        errors=[FileError(p, m) for p, m in data["errors"]],
        stats=Stats(**data["stats"]),
        mode_model_source=data["mode_model_source"],
        mode_order=tuple(data["mode_order"]),
    )
