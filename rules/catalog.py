"""Every code idxcheck can report: the invariant rules of the registry, then the meta rules
about its own suppression comments. One source for `idxcheck rules`, `idxcheck rule CODE`,
the README table and the SARIF rule metadata."""

from __future__ import annotations

from dataclasses import dataclass

from idxcheck.rules.codes import RULE_CODES
from idxcheck.rules.meta import META_RULES


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: str
    summary: str
    doc: str
    meta: bool  # about idxcheck's own comments, not about attention backends

    @property
    def first_paragraph(self) -> str:
        return " ".join(self.doc.split("\n\n", 1)[0].split())


def catalogue() -> tuple[RuleInfo, ...]:
    from idxcheck.rules.registry import REGISTRY  # the rules themselves: only for their docs

    out = [RuleInfo(r.code, r.name, r.severity, r.summary, r.doc(), False) for r in REGISTRY]
    out.extend(RuleInfo(m.code, m.name, m.severity, m.summary, m.doc(), True) for m in META_RULES)
    return tuple(out)


def known_codes() -> frozenset[str]:
    """Every code, without loading the rules."""
    return frozenset(RULE_CODES) | {meta.code for meta in META_RULES}


def lookup(code_or_name: str) -> RuleInfo | None:
    for info in catalogue():
        if info.code == code_or_name.upper() or info.name == code_or_name:
            return info
    return None


def markdown_table() -> str:
    """The README's rule table."""
    rows = ["| code | name | severity | what it flags |", "|---|---|---|---|"]
    for info in catalogue():
        rows.append(f"| {info.code} | {info.name} | {info.severity} | {info.summary} |")
    return "\n".join(rows) + "\n"
