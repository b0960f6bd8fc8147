"""The codes of the invariant rules, in registry order: what a scan needs to know of the rules
to read suppression comments and `select`/`ignore` without loading them
(`idxcheck.rules.registry` checks on import that its rules carry these codes)."""

from __future__ import annotations

# Codes are stable: never renumber, never reuse a retired code.
RULE_CODES: tuple[str, ...] = ("IDX001", "IDX002", "IDX003", "IDX004", "IDX005", "IDX006")
