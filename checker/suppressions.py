"""Suppression comments: `# idxcheck: ignore[IDX001] reason`.

A comment suppresses the findings of the codes it names whose primary span starts on its line,
or whose statement starts on its line (a finding deep inside a multi-line call can be silenced
where the statement begins). A code is required: a bare `# idxcheck: ignore` would silence rules
that do not exist yet, so it suppresses nothing and is itself reported (IDX900), and a comment
that no longer suppresses anything is reported too (IDX901), so stale comments do not pile up.

Comments are read from the file text with the tokenizer (so `#` inside strings is not a comment),
only in files that contain the marker: no file is parsed again."""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from idxcheck.extract.lines import cpython_newlines, split_lines
from idxcheck.findings import Finding
from idxcheck.spans import Span
from idxcheck.verdicts import Verdict

MARKER = "idxcheck:"
_COMMENT = re.compile(
    r"idxcheck:\s*ignore(?![\w-])(?:\[(?P<codes>[^\]]*)\])?(?P<reason>[^#]*)", re.IGNORECASE
)
_CODE = re.compile(r"^[A-Z]+[0-9]+$")


@dataclass(frozen=True)
class MetaRule:
    """A rule about idxcheck's own comments; documented like the invariant rules."""

    code: str
    name: str
    severity: str
    summary: str
    message: str
    doc_text: str

    def doc(self) -> str:
        return self.doc_text.strip()


BARE_SUPPRESSION = MetaRule(
    code="IDX900",
    name="bare-suppression",
    severity="error",
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
with `--ignore IDX900` (or `ignore = ["IDX900"]` in `[tool.idxcheck]`).
""",
)

UNUSED_SUPPRESSION = MetaRule(
    code="IDX901",
    name="unused-suppression",
    severity="error",
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

**Fix.** Delete the comment, or the stale code from its list.
""",
)

META_RULES: tuple[MetaRule, ...] = (BARE_SUPPRESSION, UNUSED_SUPPRESSION)


@dataclass(frozen=True)
class Suppression:
    path: str
    line: int  # 1-based line of the comment
    column: int  # 0-based column of the `idxcheck:` marker
    end_column: int
    codes: tuple[str, ...]
    reason: str
    text: str  # the comment as written, for messages and fingerprints

    @property
    def span(self) -> Span:
        return Span(self.path, self.line, self.column, self.line, self.end_column)


@dataclass(frozen=True)
class FileComments:
    path: str
    suppressions: tuple[Suppression, ...]
    # physical line -> first line of the statement (logical line) it belongs to
    statement_start: dict[int, int] = field(default_factory=dict)

    def lines_for(self, line: int) -> tuple[int, ...]:
        start = self.statement_start.get(line, line)
        return (line,) if start == line else (line, start)


def read_comments(path: str, text: str) -> FileComments:
    """The suppression comments of one file (empty without the marker: the common case)."""
    if MARKER not in text.lower():
        return FileComments(path, ())
    text = cpython_newlines(text)  # the tokenizer's lines are then CPython's
    found: list[Suppression] = []
    starts: dict[int, int] = {}
    try:
        current: int | None = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.extend(_parse_comment(path, tok.string, tok.start[0], tok.start[1]))
                continue
            if tok.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if current is None:
                current = tok.start[0]
            if tok.type == tokenize.NEWLINE:
                for number in range(current, tok.end[0] + 1):
                    starts[number] = current
                current = None
    except (tokenize.TokenError, SyntaxError):
        # A file the tokenizer rejects (the scan reports it as an error): read comments line by
        # line so that they are still honoured where they stand.
        found = []
        starts = {}
        for number, line in enumerate(split_lines(text, keepends=False), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                found.extend(_parse_comment(path, line[hash_at:], number, hash_at))
    return FileComments(path, tuple(found), starts)


def _parse_comment(path: str, comment: str, line: int, column: int) -> list[Suppression]:
    out = []
    for match in _COMMENT.finditer(comment):
        raw = match.group("codes")
        codes = tuple(c.upper() for c in re.split(r"[\s,]+", raw or "") if c)
        out.append(
            Suppression(
                path=path,
                line=line,
                column=column + match.start(),
                end_column=column + match.end(),
                codes=codes,
                reason=match.group("reason").strip(),
                text=match.group(0).strip(),
            )
        )
    return out


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
    digest = hashlib.sha256("\x1f".join((rule.code, suppression.text, code)).encode()).hexdigest()[
        :16
    ]
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        span=suppression.span,
        function="",
        mode="",
        message=message,
        verdict=Verdict.REFUTED,
        counterexample={},
        counterexample_text="",
        needs_text="",
        conditions=(),
        related=(),
        fingerprint=digest,
        explain=(f"comment: `{suppression.text}`",),
        replay=None,
    )
