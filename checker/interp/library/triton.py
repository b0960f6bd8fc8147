"""triton: `cdiv`, and the ceiling divisions spelled like it in the code that launches kernels."""

from __future__ import annotations

from idxcheck.interp.library.call import Call, FunctionModel
from idxcheck.interp.values import IntV, UnknownV, Value
from idxcheck.sym.terms import cdiv as cdiv_term

CDIV_NAMES = frozenset({"triton.cdiv", "cdiv", "ceil_div", "div_up", "ceildiv"})


def cdiv(call: Call) -> Value:
    args = call.args
    if len(args) == 2 and isinstance(args[0], IntV) and isinstance(args[1], IntV):
        return IntV(cdiv_term(args[0].term, args[1].term))
    return UnknownV("cdiv of unknown values")


FUNCTIONS: dict[str, FunctionModel] = dict.fromkeys(CDIV_NAMES, cdiv)
