"""The cheap text tests that decide which files are read as Python, run on raw bytes first."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from idxcheck.profiles.schema import Profile, TreeIdioms
from idxcheck.source.comments import MARKER as SUPPRESSION_MARKER
from idxcheck.source.files import SourceFile, reading, strip_comments


def _prefilter_regex(profile: Profile) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(word) for word in profile.prefilter))


class Prefilter:
    """The cheap text test that decides which files are read as Python: a role name, a runner
    word or a tree-fact pattern must occur. It runs on raw bytes first, so most files are never
    decoded."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._role_words: dict[str, bool] = {}
        # Substring tests are faster than one regex alternation of the same words (CPython's
        # `in` is a fast search; `re` tries each alternative at each position; bench/RESULTS.md,
        # "What each change did").
        self.words = tuple(profile.prefilter)
        self.raw = tuple(word.encode() for word in self.words)
        self.gates = _gates(self.raw)
        # The words that make a file one the tree facts may read, whatever its role names.
        self.fact_words = tuple(
            tuple(word.encode() for word in words) for words in profile.idioms.tree_fact_words
        ) + tuple((c.stated_by.encode(),) for c in profile.mode_constraints)
        # The words of a file that may put a batch in a mode (`feeds_batch_modes`).
        self.batch_words = tuple(word.encode() for word in profile.idioms.batch_mode_words)

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """The words as one pattern, compiled where hit lines are first looked for: a scan the
        cache answers by code reads no hit line."""
        return _prefilter_regex(self.profile)

    def matches(self, data: bytes) -> bool:
        """Whether one of the words occurs in `data`: the words of a gate are looked for only
        where the gate occurs (nearly every file of a tree holds none)."""
        for gate, words in self.gates:
            if gate in data and (words == (gate,) or any(word in data for word in words)):
                return True
        return False

    def matches_text(self, text: str) -> bool:
        """The same test on the decoded text (the bytes of a file in another encoding than
        UTF-8 can differ); what `regex` finds a first match for."""
        return any(word in text for word in self.words)

    def hit_lines(self, text: str) -> list[int]:
        """The lines whose classes and functions are analysed: those of a runner word or
        tree-fact pattern, and those where a role's words are a role name. The words of a role
        inside a name that is not one (`seqlen.has_cu_seqlens_q` in a kernel) do not make the
        code around them hold a site: every site binds a role name, and every role name holds
        its role's words joined by `_`, which are prefilter words. Comments are left out: a
        word in a comment binds nothing (a 5,000-line kernel class whose parameters' comments
        name `cu_seqlens_q` holds no site)."""
        return self.code_hit_lines(strip_comments(text))  # line breaks stay, so line numbers do

    def code_hit_lines(self, text: str) -> list[int]:
        """`hit_lines` of a text whose comments are already left out."""
        lines: set[int] = set()
        for match in self.regex.finditer(text):
            if self._role_word(match.group()):
                start, end = match.span()
                while start > 0 and text[start - 1] in _NAME_CHARS:
                    start -= 1
                while end < len(text) and text[end] in _NAME_CHARS:
                    end += 1
                if self.profile.role_of(text[start:end]) is None:
                    continue
            lines.add(text.count("\n", 0, match.start()) + 1)
        return sorted(lines)

    def _role_word(self, word: str) -> bool:
        found = self._role_words.get(word)
        if found is None:
            found = self._role_words[word] = self.profile.role_of(word) is not None
        return found


# A gate is at least this long: shorter ones (`max_`) occur in most files of a tree, and each
# file that holds a gate is searched for its words too; longer ones group fewer words, so more
# gates are tested (the lengths compared: bench/RESULTS.md, "What each change did").
MIN_GATE = 5


def _gates(words: Sequence[bytes]) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
    """The words grouped under substrings they share (a file without a group's substring
    holds none of its words): each time, the substring of at least MIN_GATE bytes that the
    most remaining words hold (then the longest, then the first in byte order)."""
    left = list(dict.fromkeys(words))
    gates: list[tuple[bytes, tuple[bytes, ...]]] = []
    while left:
        holders: dict[bytes, int] = {}
        for word in left:
            parts = {
                word[i:j]
                for i in range(len(word))
                for j in range(i + min(MIN_GATE, len(word)), len(word) + 1)
            }
            for part in parts:
                holders[part] = holders.get(part, 0) + 1
        gate = max(holders, key=lambda part: (holders[part], len(part), part))
        group = tuple(word for word in left if gate in word)
        gates.append((gate, group))
        left = [word for word in left if gate not in word]
    return tuple(gates)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


# `in` on lowered bytes: cheaper than a case-insensitive regex search of the same bytes
# (bench/RESULTS.md, "Measurements that stood in code comments").
MARKER_BYTES = SUPPRESSION_MARKER.lower().encode()


# The one character outside ASCII that lowers to a letter of the marker (`K`, the Kelvin
# sign, to `k`; `İ` lowers to `i` and a combining dot, which no marker letter follows).
_KELVIN = "\u212a"


def holds_marker(data: bytes, text: str) -> bool:
    """`SUPPRESSION_MARKER in text.lower()` for `text` decoded from the UTF-8 `data`, from the
    bytes: lowering them is cheaper than lowering the text (bench/RESULTS.md, "What each change
    did"), and it lowers the ASCII letters alike."""
    if MARKER_BYTES in data.lower():
        return True
    return _KELVIN in text and SUPPRESSION_MARKER in text.lower()


def batch_modes(text: str, idioms: TreeIdioms) -> frozenset[str]:
    """The modes the text puts a batch in: where a batch's mode is assigned (the members named
    in the value assigned), or a batch is built in a mode (the profile's patterns)."""
    assigned, keyword, member = (
        idioms.batch_mode_assigned,
        idioms.batch_mode_keyword,
        idioms.batch_mode_member,
    )
    if assigned is None or keyword is None or member is None:
        return frozenset()
    if not all(word in text for word in idioms.batch_mode_words):
        return frozenset()
    found: set[str] = set(keyword.findall(text))
    for match in assigned.finditer(text):
        found.update(member.findall(_value_text(text, match.end())))
    return frozenset(found)


def _value_text(text: str, start: int) -> str:
    """The text of the value assigned from `start`: to the end of the line, or to the closing
    bracket of one that opens there."""
    i = start
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "(":
        end = text.find("\n", i)
        return text[i : end if end >= 0 else len(text)]
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[i : j + 1]
    return text[i:]


def file_batch_modes(source: SourceFile, profile: Profile) -> frozenset[str]:
    """`batch_modes` of a file's text, read once per text (`reading`)."""
    return reading(source, "batch-modes", lambda: batch_modes(source.text, profile.idioms))


def feeds_batch_modes(source: SourceFile, profile: Profile) -> bool:
    """Whether the file puts a batch in a mode `modes_not_run` looks at."""
    watched = set(profile.worker_modes) | set(profile.worker_evidence)
    return bool(file_batch_modes(source, profile) & watched)
