"""A finding's detail as plain lines (counterexample, related places, confirmation), for the
formats that carry one block of text per finding (GitHub annotations, JUnit failures)."""

from __future__ import annotations

from typing import Any

from idxcheck.model.findings import Finding, Launch


def launch_lines(finding: Finding) -> list[str]:
    """The launch configuration of a finding's counterexample, as `launch: ...` lines: the
    command, what the model must be and what happens at run time, the symbols with no known
    setting."""
    launch = finding.launch
    if launch is None:
        return []
    lines = [f"launch: {launch.command}"]
    needs = [f"MODEL is {m}" for m in launch.model] + list(launch.runtime)
    if needs:
        lines.append("launch: " + "; ".join(needs))
    if launch.unknown:
        lines.append("launch: no known setting for " + ", ".join(launch.unknown))
    return lines


def launch_dict(launch: Launch | None) -> dict[str, Any] | None:
    """The launch configuration as JSON data (JSON and SARIF reports)."""
    if launch is None:
        return None
    return {
        "command": launch.command,
        "model": list(launch.model),
        "runtime": list(launch.runtime),
        "settings": [
            {"symbol": symbol, "value": value, "settings": list(given)}
            for symbol, value, given in launch.settings
        ],
        "unknown": list(launch.unknown),
    }


def fix_line(finding: Finding) -> str:
    """The fix of a finding as one line ("" without one)."""
    fix = finding.fix
    if fix is None:
        return ""
    return (
        f"fix: replace `{fix.original}` with `{fix.replacement}` ({fix.description}; "
        "`idxcheck scan --fix` applies it)"
    )


def detail_lines(finding: Finding) -> list[str]:
    lines: list[str] = []
    if finding.counterexample_text:
        needs = f" (needs {finding.needs_text})" if finding.needs_text else ""
        lines.append(f"counterexample: {finding.counterexample_text}{needs}")
    lines.extend(launch_lines(finding))
    if finding.fix is not None:
        lines.append(fix_line(finding))
    for related in finding.related:
        where = f"{related.span.path}:{related.span.line}: " if related.span else ""
        lines.append(f"{where}{related.message}")
    if finding.confirmation:
        lines.append(
            f"confirmation: {finding.confirmation.get('status')}: "
            f"{finding.confirmation.get('reason', '')}"
        )
    return lines
