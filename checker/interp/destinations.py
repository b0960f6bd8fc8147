"""Roles by destination: the role-named parameters a call hands its arguments to.

A value is an index pointer or a grid scalar wherever it goes to a place of that role, whatever
the name it is kept under: a parameter of a method of the class or of a function of the
scanned tree (a Triton kernel, a module helper) whose name has the role, or a parameter of a
library entry the profile lists with its position (`flash_attn_varlen_func(q, k, v,
cu_seqlens_q, ...)`, FlashInfer's `plan(qo_indptr, ...)`). Keywords are destinations by their
own name (the interpreter binds them); this module finds the positional ones, and the keyword
ones of a helper of the class, whose keywords it inlines instead."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from idxcheck.model.kinds import Role
from idxcheck.profiles.schema import Profile
from idxcheck.source.files import FunctionSource
from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

_HEADER_END = re.compile(r"\)\s*(?:->[^\n]*)?:[ \t]*\n")

# A function's parameters in order: (positional ones, keyword-only ones).
Signature = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Destination:
    """A role-named parameter an argument reaches."""

    param: str
    role: Role
    text: str  # how a finding names the place: "`cu_seqlens_q=` of `flash_attn_varlen_func`"


@dataclass(frozen=True)
class CallDestinations:
    positional: dict[int, Destination]
    keywords: dict[str, Destination]


NONE = CallDestinations({}, {})


def callee_name(func: cst.BaseExpression) -> tuple[str | None, str]:
    """The called name and the receiver's text as written: `kernel[grid](...)` -> `kernel`,
    `self.prefill_wrapper.plan(...)` -> (`plan`, `self.prefill_wrapper`)."""
    # Exact types: a failed `isinstance` with a libcst class is a Python call
    # (`ABCMeta.__instancecheck__`), and every call the interpreter meets is named here.
    while type(func) is cst.Subscript:
        func = func.value
    if type(func) is cst.Name:
        return func.value, ""
    if type(func) is cst.Attribute:
        parts: list[str] = []
        node: cst.BaseExpression = func.value
        while type(node) is cst.Attribute:
            parts.append(node.attr.value)
            node = node.value
        if type(node) is cst.Name:
            parts.append(node.value)
        return func.attr.value, ".".join(reversed(parts))
    return None, ""


# `method_signature`'s answers, by function, with the function's last line they were read up to
# (a method's end is set once its class is read): each call of a helper is asked its
# destinations, and the test of each parameter's name against the body took a regular
# expression per name per call (bench/RESULTS.md, "Where a cold scan's Python time went").
_SIGNATURES: weakref.WeakKeyDictionary[FunctionSource, tuple[int, Signature]] = (
    weakref.WeakKeyDictionary()
)


def method_signature(fn: FunctionSource) -> Signature:
    """A helper's parameters, each name replaced by "" where its body never mentions it: a
    parameter nothing reads gives no role (a helper that takes `max_seqlen_q` and drops it)."""
    found = _SIGNATURES.get(fn)
    if found is not None and found[0] == fn.end_line:
        return found[1]
    signature = _read_signature(fn)
    _SIGNATURES[fn] = (fn.end_line, signature)
    return signature


def _read_signature(fn: FunctionSource) -> Signature:
    params = fn.node.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    if positional and positional[0] in ("self", "cls") and fn.owner is not None:
        positional = positional[1:]
    keyword_only = [p.name.value for p in params.kwonly_params]
    body = fn.raw_text()
    header = _HEADER_END.search(body)
    if header is not None:
        body = body[header.end() :]  # after the header: a name in it reads nothing
    used = {
        name for name in (*positional, *keyword_only) if re.search(rf"\b{re.escape(name)}\b", body)
    }
    return (
        tuple(name if name in used else "" for name in positional),
        tuple(name for name in keyword_only if name in used),
    )


def destinations(
    profile: Profile,
    name: str | None,
    receiver: str,
    method: FunctionSource | None,
    signatures: Callable[[str], Signature | None],
) -> CallDestinations:
    """Where the arguments of a call go that give them a role: the parameters of `method` (a
    helper of the class being called), else of a function of the tree by that name, else of
    the profile's library entry."""
    if method is not None:
        return _of_signature(profile, method_signature(method), method.qualname, keywords=True)
    if name is None:
        return NONE
    found = signatures(name)
    if found is not None:
        return _of_signature(profile, found, name, keywords=False)
    entry = profile.role_calls.get(name)
    if entry is None:
        return NONE
    excluded, params = entry
    lowered = receiver.lower()
    if any(word in lowered for word in excluded):
        return NONE
    positional: dict[int, Destination] = {}
    for param, position in params:
        role = profile.role_of(param)
        if role is not None and position is not None:
            positional[position] = Destination(param, role, _text(param, name, position))
    return CallDestinations(positional, {})


def _of_signature(
    profile: Profile, signature: Signature, owner: str, keywords: bool
) -> CallDestinations:
    positional_names, keyword_only = signature
    positional: dict[int, Destination] = {}
    by_keyword: dict[str, Destination] = {}
    for index, param in enumerate(positional_names):
        role = profile.role_of(param) if param else None
        if role is not None:
            positional[index] = Destination(param, role, _text(param, owner, index))
            if keywords:
                by_keyword[param] = Destination(param, role, f"`{param}=` of `{owner}`")
    if keywords:
        for param in keyword_only:
            role = profile.role_of(param)
            if role is not None:
                by_keyword[param] = Destination(param, role, f"`{param}=` of `{owner}`")
    return CallDestinations(positional, by_keyword)


def _text(param: str, owner: str, position: int) -> str:
    return f"parameter `{param}` (argument {position + 1}) of `{owner}`"


def keyword_text(key: str, callee: str | None) -> str | None:
    return f"`{key}=` of `{callee}`" if callee else None
