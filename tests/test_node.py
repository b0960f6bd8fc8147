"""IR nodes are interned: building one equal to an existing node returns that node, as a
frozen dataclass built the usual way, and a wrong call fails as the dataclass would."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from idxcheck.sym.node import node
from idxcheck.sym.terms import BinOp, Const, Sym


@node
class _Pair:
    left: object
    right: int = 0


def test_an_equal_node_is_the_same_object_however_it_is_built() -> None:
    first = BinOp("+", Sym("bs"), Const(7))
    assert BinOp("+", Sym("bs"), Const(7)) is first
    assert BinOp(op="+", left=Sym("bs"), right=Const(7)) is first
    assert BinOp("+", Sym("bs"), right=Const(7)) is first
    assert dataclasses.replace(first, right=Const(7)) is first
    assert pickle.loads(pickle.dumps(first)) is first
    assert _Pair("a") is _Pair("a", 0) is _Pair(left="a", right=0)
    assert _Pair("a", 1) is not _Pair("a")


def test_a_found_node_is_not_initialised_again() -> None:
    made = _Pair("b", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.right = 3  # type: ignore[misc]
    object.__setattr__(made, "right", 5)  # what a second `__init__` would overwrite
    assert _Pair("b", 2) is made and made.right == 5
    object.__setattr__(made, "right", 2)


def test_an_unhashable_field_makes_a_node_that_is_not_interned() -> None:
    one, two = _Pair(["x"], 1), _Pair(["x"], 1)
    assert one is not two and one.left == ["x"] and one.right == 1
    assert one == one and one != two  # equality is identity
    assert {one: 1, two: 2}[one] == 1


def test_equality_and_hash_agree_with_the_fields() -> None:
    built = {BinOp("*", Sym("bs"), Const(2)): "twice"}
    assert built[BinOp("*", Sym("bs"), Const(2))] == "twice"
    assert BinOp("*", Sym("bs"), Const(2)) != BinOp("*", Sym("bs"), Const(3))
    assert BinOp("*", Sym("bs"), Const(2)) != "bs * 2"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing 1 required positional argument: 'left'"),
        (("a", 1, 2), {}, "takes from 2 to 3 positional arguments but 4 were given"),
        (("a",), {"other": 1}, "unexpected keyword argument 'other'"),
        (("a",), {"left": 1}, "got multiple values for argument 'left'"),
    ],
)
def test_a_wrong_call_fails_as_the_dataclass_would(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    kept = _Pair("a"), _Pair("a", 1)  # an equal node in the table does not answer instead
    with pytest.raises(TypeError, match=message):
        _Pair(*args, **kwargs)
    assert kept == (_Pair("a"), _Pair("a", 1))
