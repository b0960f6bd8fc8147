"""Meta rules: rules about idxcheck's own suppression comments, documented like the invariant rules."""

from __future__ import annotations

from dataclasses import dataclass

from idxcheck.model.kinds import Severity


@dataclass(frozen=True)
class MetaRule:
    """A rule about idxcheck's own comments; documented like the invariant rules."""

    code: str
    name: str
    severity: Severity
    summary: str
    message: str
    doc_text: str
    # Whether its findings make the run exit 1 (else only with --strict): a comment that
    # suppresses nothing hides no bug, so it is reported without failing the run.
    fails_run: bool = True

    def doc(self) -> str:
        return self.doc_text.strip()


BARE_SUPPRESSION = MetaRule(
    code="IDX900",
    name="bare-suppression",
    severity=Severity.ERROR,
    summary="`# idxcheck: ignore` without a rule code",
    message="suppression comment names no rule code: write `# idxcheck: ignore[CODE] reason`",
    doc_text="""
A suppression comment must name the rules it silences.

**Invariant.** Every `# idxcheck: ignore` comment carries one or more codes in brackets:
`# idxcheck: ignore[IDX001] draft-extend v2 never runs with topk > 1 here`.

**Why it breaks.** A bare comment would silence every rule on the line, including rules added
later that the author never saw. idxcheck therefore treats it as suppressing nothing, and reports
it so that it does not read as if it worked.

**Example.**

    per_req = self.speculative_num_steps + 1  # idxcheck: ignore

**Fix.** Name the code(s) and say why: `# idxcheck: ignore[IDX001] reason`. Disable this rule
with `--ignore IDX900` (or `ignore = ["IDX900"]` in `[tool.idxcheck]`). A file-level
`# idxcheck: ignore-file` without codes is not this rule's: it suppresses every finding of its
file, as the file's author asked.
""",
)


UNUSED_SUPPRESSION = MetaRule(
    code="IDX901",
    name="unused-suppression",
    # A warning: the code it sits on is not wrong, so it does not fail the run but under
    # --strict (a stale comment would hide the next real finding on its line).
    severity=Severity.WARNING,
    fails_run=False,
    summary="suppression comment that suppresses nothing",
    message="unused suppression: no {code} finding here",
    doc_text="""
A suppression comment that no longer suppresses anything should go.

**Invariant.** Each code in `# idxcheck: ignore[...]` matches a finding of that rule on the
comment's line (or in the statement that starts on it), in this scan.

**Why it breaks.** The code was fixed, or moved, and the comment stayed. A stale comment
silently suppresses the next real finding on that line. A code that is not a rule (a typo) can
never suppress anything. Codes of rules that are not enabled in this scan (`--select`,
`--ignore`) are not reported.

**Example.**

    per_req = self.num_draft_tokens  # idxcheck: ignore[IDX001] fixed long ago

**Severity.** A warning (SARIF `warning`, a GitHub `::warning` annotation): the code it
sits on is not wrong. It is reported but does not make the run exit 1, unless with `--strict`
(`strict = true`), which fails on it as on UNKNOWN verdicts; switch it off with
`--ignore IDX901`.

A file-level comment (`# idxcheck: ignore-file[IDX001]`) is unused when no finding of the
code is in its file; a bare `# idxcheck: ignore-file` when no finding at all is.

**Fix.** Delete the comment, or the stale code from its list.
""",
)


META_RULES: tuple[MetaRule, ...] = (BARE_SUPPRESSION, UNUSED_SUPPRESSION)


def advisory_codes() -> frozenset[str]:
    """The codes whose findings do not fail a run but under --strict."""
    return frozenset(rule.code for rule in META_RULES if not rule.fails_run)
