"""Python's `dataclasses.replace` as backends use it on their metadata: a copy of an object with
some fields changed (vLLM's Mamba builders return `replace(metadata, query_start_loc_d=...)`).

The keywords name the copy's fields, so they bind their values like a metadata class's keywords
do (the interpreter binds the keywords of every call); the copy is the object with those fields
changed, its other fields the object's."""

from __future__ import annotations

from idxcheck.interp.choices import map_choice
from idxcheck.interp.library.call import Call, FunctionModel
from idxcheck.interp.values import ChoiceV, ObjectV, UnknownV, Value


def replace(call: Call) -> Value:
    if len(call.args) != 1:
        return UnknownV("`replace()` without exactly one object")
    changes = call.kwargs

    def copy(obj: Value) -> Value:
        if isinstance(obj, ObjectV):
            for name, value in changes.items():
                obj = obj.with_field(name, value)
            return obj
        if isinstance(obj, UnknownV):
            return UnknownV(f"`replace()` of an object that is not modelled: {obj.reason}")
        return UnknownV("`replace()` of a value that is not a metadata object")

    only = call.args[0]
    return map_choice(only, copy) if isinstance(only, ChoiceV) else copy(only)


FUNCTIONS: dict[str, FunctionModel] = {"dataclasses.replace": replace}

# Names a file may import them by: (module, name) -> the dotted name of the model.
IMPORTED: dict[tuple[str, str], str] = {("dataclasses", "replace"): "dataclasses.replace"}
