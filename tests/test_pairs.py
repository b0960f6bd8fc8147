"""Which bindings of one group pair (`check.obligations.may_pair`): two arguments of one call
only when one run of the code made them; a field written on an object after it was made with
the object's arguments from any run (metadata made at capture, refilled at replay)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from idxcheck.check.obligations import may_pair
from idxcheck.model.kinds import BindingKind

ENTRY = ("Builder.build", "Builder._build_decode")
ALONE = ("Builder._build_decode",)


def _binding(kind: BindingKind, chain: tuple[str, ...]) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, chain=chain)


@pytest.mark.parametrize(
    ("first", "second", "pairs"),
    [
        ((BindingKind.KEYWORD, ENTRY), (BindingKind.ARGUMENT, ENTRY), True),
        ((BindingKind.KEYWORD, ENTRY), (BindingKind.ARGUMENT, ALONE), False),
        ((BindingKind.PARAMETER, ALONE), (BindingKind.POSITIONAL, ENTRY), False),
        ((BindingKind.ATTRIBUTE, ALONE), (BindingKind.KEYWORD, ENTRY), True),
        ((BindingKind.ATTRIBUTE, ALONE), (BindingKind.ATTRIBUTE, ENTRY), True),
    ],
)
def test_arguments_of_one_call_pair_only_within_one_run(
    first: tuple[BindingKind, tuple[str, ...]],
    second: tuple[BindingKind, tuple[str, ...]],
    pairs: bool,
) -> None:
    a, b = _binding(*first), _binding(*second)
    assert may_pair(a, b) is pairs  # type: ignore[arg-type]
    assert may_pair(b, a) is pairs  # type: ignore[arg-type]
