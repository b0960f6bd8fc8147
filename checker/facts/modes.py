"""The forward-mode model: the members of `ForwardMode` and each predicate method as a formula
over them (and over the predicate's flag parameters, such as `include_v2`).

Read from the scanned tree when it holds the enum (so that both SGLang generations, with and
without DRAFT_EXTEND v1, are modelled as they are); otherwise taken from the profile."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from idxcheck.model.spans import Span
from idxcheck.profiles.schema import Profile
from idxcheck.sym.terms import FALSE, Atom, BoolConst, Formula, ModeIs, Rewriter, conj, disj

FLAG_PREFIX = "flag:"


@dataclass(frozen=True)
class Predicate:
    name: str
    params: tuple[tuple[str, bool], ...]  # (flag name, default)
    formula: Formula  # over ModeIs and Atom(FLAG_PREFIX + flag)


def applied(pred: Predicate, args: list[Formula], kwargs: dict[str, Formula]) -> Formula:
    """The predicate's formula with its flags bound to the call's arguments (by position, then
    by keyword; a flag not passed takes its default)."""
    values: dict[str, Formula] = {p: BoolConst(default) for p, default in pred.params}
    for (param, _), arg in zip(pred.params, args, strict=False):
        values[param] = arg
    for key, arg in kwargs.items():
        if key in values:
            values[key] = arg
    return substitute_flags(pred.formula, values)


@dataclass(frozen=True)
class ModeModel:
    enum_name: str
    members: tuple[str, ...]
    predicates: dict[str, Predicate]
    source: str  # where it was read from: a file path, or "profile <name>"
    span: Span | None = None

    def call(self, name: str, args: list[Formula], kwargs: dict[str, Formula]) -> Formula | None:
        pred = self.predicates.get(name)
        if pred is None:
            return None
        return applied(pred, args, kwargs)


def substitute_flags(formula: Formula, values: dict[str, Formula]) -> Formula:
    """A predicate's formula with its flag parameters bound (an unbound flag is false)."""

    def flag(f: Formula) -> Formula | None:
        if isinstance(f, Atom) and f.key.startswith(FLAG_PREFIX):
            return values.get(f.key[len(FLAG_PREFIX) :], FALSE)
        return None

    return Rewriter(formula_leaf=flag).formula(formula)


def top_level_alternatives(pattern: str) -> list[str]:
    """`a|b(c|d)` -> [`a`, `b(c|d)`]: the branches of a regular expression's outermost
    alternation (a text matches the pattern where it matches one of them). A pattern with
    global inline flags (`(?i)...`) stays whole."""
    if re.match(r"\(\?[aiLmsux]+\)", pattern):
        return [pattern]
    branches: list[str] = []
    depth, start, index, in_class = 0, 0, 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # A `]` right after `[` or `[^` is a member of the class, not its end.
            if pattern.startswith("^", index + 1):
                index += 1
            if pattern.startswith("]", index + 1):
                index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:index])
            start = index + 1
        index += 1
    branches.append(pattern[start:])
    return branches


def mentioned_members(profile: Profile, text: str) -> tuple[str, ...]:
    """The profile's members of one generation only that `text` mentions. A mention holds the
    member's name in upper or lower case (`ForwardMode.DRAFT_EXTEND`, `.is_draft_extend(`): a
    substring test picks the texts the profile's pattern is tried on."""
    found: list[str] = []
    for member, pattern in profile.mode_members_if_mentioned.items():
        if member not in text and member.lower() not in text:
            continue
        # Each alternative on its own: one that starts with a literal is searched for at
        # memchr speed, where an alternation is tried at every position.
        alternatives = top_level_alternatives(pattern)
        if any(re.search(alternative, text) for alternative in alternatives):
            found.append(member)
    return tuple(found)


def mode_model_from_profile(
    profile: Profile, mentioned: Collection[str] | None = None
) -> ModeModel:
    """The profile's default model; members of one generation only are kept when the scanned
    files mention them (`mentioned`, from `mentioned_members`; None: all are kept)."""
    members = tuple(
        m
        for m in profile.mode_members
        if m not in profile.mode_members_if_mentioned or mentioned is None or m in mentioned
    )
    predicates: dict[str, Predicate] = {}
    for name, (always, flagged) in profile.mode_predicates.items():
        parts: list[Formula] = [ModeIs(frozenset(always))]
        for flag, flagged_members in flagged.items():
            parts.append(conj(Atom(FLAG_PREFIX + flag, flag), ModeIs(frozenset(flagged_members))))
        predicates[name] = Predicate(name, tuple((flag, False) for flag in flagged), disj(*parts))
    return ModeModel(profile.idioms.mode_enum, members, predicates, f"profile {profile.name}")
