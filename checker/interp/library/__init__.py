"""Models of library calls, as a table: each library's functions in a module of its own
(`builtins`, `torch`, `numpy`, `triton`, `dataclasses` in `copies`; what torch and numpy share
in `arrays`), each model a small function of the `Call`. Adding `torch.repeat_interleave` is
adding one model and one entry to `torch.FUNCTIONS`."""

from __future__ import annotations

from collections.abc import Callable

from idxcheck.interp.library import arrays, builtins, copies, numpy, torch, triton
from idxcheck.interp.library.call import Call, FunctionModel
from idxcheck.interp.values import Value

# Functions by their dotted name as the code resolves it.
FUNCTIONS: dict[str, FunctionModel] = {
    **builtins.FUNCTIONS,
    **torch.FUNCTIONS,
    **numpy.FUNCTIONS,
    **triton.FUNCTIONS,
    **copies.FUNCTIONS,
}

# Library functions a file imports by name (`from dataclasses import replace`): (module, name)
# -> the dotted name of the model.
IMPORTED: dict[tuple[str, str], str] = {**copies.IMPORTED}

# Functions known by their last name under another module (`torch.Tensor.arange`, `np.pad`,
# `utils.ceil_div`): (test of the dotted name, model).
BY_SHORT_NAME: tuple[tuple[Callable[[str, str], bool], FunctionModel], ...] = (
    (
        lambda name, short: short == "arange" and name.startswith(("torch", "np", "numpy")),
        arrays.arange,
    ),
    (lambda name, short: short == "pad", torch.pad),
    (lambda name, short: short in triton.CDIV_NAMES, triton.cdiv),
)

# Library functions the analysed code calls by their bare name (`from torch import arange`,
# `from triton import cdiv`): a bare name it does not define is taken for one of them.
BARE_FUNCTIONS = frozenset({"arange"}) | triton.CDIV_NAMES

# Tried after the project's own functions (`idxcheck.profiles`): what a library function of a
# runtime value gives.
FALLBACKS: tuple[Callable[[Call], Value | None], ...] = (torch.of_runtime,)


def function_model(name: str) -> FunctionModel | None:
    """The model of the function `name`, or None when no library has it."""
    found = FUNCTIONS.get(name)
    if found is not None:
        return found
    short = name.split(".")[-1]
    for matches, model in BY_SHORT_NAME:
        if matches(name, short):
            return model
    return None


def fallback(call: Call) -> Value | None:
    for model in FALLBACKS:
        found = model(call)
        if found is not None:
            return found
    return None
