"""A counterexample in the operator's terms: the launch configuration that gives it, from the
profile's `LAUNCH_*` settings (`profiles.schema.LaunchSpec`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from idxcheck.model.findings import Launch
from idxcheck.profiles.schema import LaunchSpec

# The placeholder of the launch line's backend name when no registered name is known.
UNKNOWN_BACKEND = "BACKEND"


def launch_of(
    spec: LaunchSpec,
    counterexample: Mapping[str, int],
    mode: str,
    class_name: str,
    backends: Sequence[str],
    arch: str = "",
    algorithm: str = "",
    draft_worker: bool = False,
) -> Launch | None:
    """The launch configuration of `counterexample` in `mode` for the backend class
    `class_name`, registered under `backends`, the likeliest first (None: the profile says
    nothing of launches); `algorithm`: the speculative algorithm it needs (in place of the
    one the mode's settings name), `draft_worker`: whether it needs a draft worker to run the
    backend."""
    if not spec.command:
        return None
    env: list[str] = []
    flags: list[str] = []
    model: list[str] = []
    runtime: list[str] = []

    def add(setting: str, value: str) -> None:
        text = setting.replace("{}", value)
        if text.startswith("model: "):
            model.append(text[len("model: ") :])
        elif text.startswith("runtime: "):
            runtime.append(text[len("runtime: ") :])
        elif text.startswith("-"):
            flags.append(text)
        elif "=" in text.split(" ", 1)[0]:
            env.append(text)
        else:
            runtime.append(text)

    if spec.backend:
        add(spec.backend, backends[0] if backends else UNKNOWN_BACKEND)
        if not backends and class_name:
            runtime.append(
                f"{UNKNOWN_BACKEND}: the attention backend that builds `{class_name}` (no "
                "registered name for it in the scanned files)"
            )
    flag = spec.algorithm.split("{}")[0]
    for setting in spec.modes.get(mode, ()):
        if algorithm and flag and setting.startswith(flag):
            continue
        add(setting, "")
    if algorithm and spec.algorithm:
        add(spec.algorithm, algorithm)
    if draft_worker:
        for setting in spec.draft_worker:
            add(setting, "")
    settings: list[tuple[str, int, tuple[str, ...]]] = []
    unknown: list[str] = []
    for symbol, value in counterexample.items():
        given = spec.settings.get(symbol)
        if given is None:
            unknown.append(symbol)
            continue
        if symbol in spec.only_positive and value <= 0:
            settings.append((symbol, value, ()))
            continue
        for setting in given:
            add(setting, str(value))
        settings.append((symbol, value, tuple(s.replace("{}", str(value)) for s in given)))
    if arch:
        for setting in spec.settings.get("arch", ()):
            add(setting, arch)
    command = " ".join([*_unique(env), spec.command, *_unique(flags)])
    return Launch(
        command=command,
        model=tuple(_unique(model)),
        runtime=tuple(_unique(runtime)),
        settings=tuple(settings),
        unknown=tuple(unknown),
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
