"""numpy: the array functions it shares with torch, under its names."""

from __future__ import annotations

from idxcheck.interp.library import arrays
from idxcheck.interp.library.call import FunctionModel

FUNCTIONS: dict[str, FunctionModel] = {
    f"{module}.{name}": model
    for module in ("np", "numpy")
    for name, model in (
        ("arange", arrays.arange),
        ("cumsum", arrays.cumsum),
        ("full", arrays.full),
        ("zeros", arrays.allocate),
        ("empty", arrays.allocate),
    )
}
