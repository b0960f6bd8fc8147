"""The prefilter's gates: a file passes exactly when one of the profile's words occurs in it,
whatever substrings the words are grouped under."""

from __future__ import annotations

import random
from pathlib import Path

from idxcheck.profiles.schema import load_profile
from idxcheck.source.prefilter import MIN_GATE, Prefilter, _gates


def _any_word(words: tuple[bytes, ...], data: bytes) -> bool:
    return any(word in data for word in words)


def test_every_word_is_under_one_gate_it_holds() -> None:
    prefilter = Prefilter(load_profile("sglang"))
    grouped = [word for _, words in prefilter.gates for word in words]
    assert sorted(grouped) == sorted(set(prefilter.raw))
    for gate, words in prefilter.gates:
        assert all(gate in word for word in words)
        assert len(gate) >= MIN_GATE


def test_gates_of_short_and_overlapping_words() -> None:
    words = (b"ab", b"abc", b"xyzxyz", b"zxyz", b"max_qo_len", b"max_q_len")
    gates = _gates(words)
    assert sorted(w for _, group in gates for w in group) == sorted(words)
    assert all(gate in word for gate, group in gates for word in group)


def test_matches_is_the_test_of_every_word() -> None:
    prefilter = Prefilter(load_profile("sglang"))
    words = prefilter.raw
    pieces = [*words, *(gate for gate, _ in prefilter.gates), b" ", b"\n", b"_", b"max_"]
    pieces += [word[: len(word) // 2] for word in words] + [word[1:] for word in words]
    rng = random.Random(7)
    samples = [b"", *words, *(gate for gate, _ in prefilter.gates)]
    samples += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(5000)]
    samples += [path.read_bytes() for path in sorted(Path("fixtures").rglob("*.py"))]
    assert any(prefilter.matches(s) for s in samples)
    assert not all(prefilter.matches(s) for s in samples)
    for sample in samples:
        assert prefilter.matches(sample) == _any_word(words, sample), sample
