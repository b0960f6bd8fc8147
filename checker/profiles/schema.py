"""Project profiles: the data of `idxcheck.profiles.<name>` (its constants: `constants.CONSTANTS`),
loaded and parsed once into a typed `Profile`. Adding a project is adding a module to this
package."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from idxcheck.model.kinds import Role
from idxcheck.sym.parse import ConstraintError, parse_formula, parse_term
from idxcheck.sym.terms import Formula, Term


@dataclass(frozen=True)
class DomainConstraint:
    text: str
    why: str
    formula: Formula


@dataclass(frozen=True)
class DefaultWidth:
    mode: str
    term: Term
    text: str
    source: str


@dataclass(frozen=True)
class ModeConstraint:
    """A constraint of one mode that holds where the tree's text states it
    (`MODE_CONSTRAINTS` of the profile module)."""

    mode: str
    text: str
    formula: Formula
    stated_by: str  # words of the tree's text that state it
    why: str
    # It holds against the runners of `mode` that also capture in this mode (empty: all).
    runners_also_in: str = ""


@dataclass(frozen=True)
class UniformSplit:
    """A runtime function that splits a batch into two parts by each request's query tokens
    (`UNIFORM_SPLITS` of the profile module), known where every request carries one width:
    `below` are its counts when that width is at most the threshold, `above` otherwise, each
    "requests", "tokens" or "none"."""

    threshold: str  # the threshold's parameter
    position: int  # its position
    default: int  # its default
    # Flags that must keep their default for the split to be known: (parameter, position,
    # default).
    flags: tuple[tuple[str, int, bool], ...]
    below: tuple[str, ...]
    above: tuple[str, ...]


@dataclass(frozen=True)
class LaunchSpec:
    """How an operator sets a configuration (`LAUNCH_*` of the profile module): the command
    that starts the server, the setting that selects a backend, each symbol's settings and
    each mode's. `{}` in a setting stands for the value."""

    command: str = ""
    backend: str = ""
    settings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    only_positive: frozenset[str] = frozenset()
    modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The setting that selects the speculative algorithm (`{}`: the member), replacing the
    # one a mode's settings name where a counterexample needs another algorithm, and what
    # running the backend in a draft worker takes.
    algorithm: str = ""
    draft_worker: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeIdioms:
    """How a project's tree states its own facts in its text: the words and patterns the tree
    facts (`idxcheck.facts`) and the prefilter look for. A profile without them reads no such
    fact (no mode enum, no argument checks, no batches put in modes)."""

    # The forward-mode enum class, and the words of a file that may state configuration
    # constraints (a file holding every word of one entry is read for tree facts).
    mode_enum: str = ""
    tree_fact_words: tuple[tuple[str, ...], ...] = ()
    # A file holding all of `batch_mode_words` may put a batch in a mode: `batch_mode_assigned`
    # finds an assignment of a batch's mode (the value's members by `batch_mode_member`),
    # `batch_mode_keyword` a batch built in a mode (group 1: the member).
    batch_mode_words: tuple[str, ...] = ()
    batch_mode_assigned: re.Pattern[str] | None = None
    batch_mode_keyword: re.Pattern[str] | None = None
    batch_mode_member: re.Pattern[str] | None = None
    # The mode a runner captures in when no runner mode attribute says it (group 1: the member).
    runner_mode_keyword: re.Pattern[str] | None = None
    # The mode whose draft and target runners serve different batches, and the opaque runtime
    # condition (key, text) that holds for the target's.
    draft_decode_mode: str = ""
    draft_decode_selector: tuple[str, str] | None = None
    # Argument checks: the decorator that registers a backend by name, the configuration
    # attribute that selects one, the words of a file that may hold a check, the names
    # configuration objects have inside one, and an assignment that forces a constraint (its
    # pattern, and how it is cited).
    registry_decorator: str = ""
    backend_selector: str = ""
    check_words: tuple[str, ...] = ()
    check_config_names: tuple[str, ...] = ()
    forced_assignment: re.Pattern[str] | None = None
    forced_text: str = ""

    def declares_mode_enum(self, text: str) -> bool:
        return bool(self.mode_enum) and f"class {self.mode_enum}" in text

    def registers_backends(self, text: str) -> bool:
        return bool(self.registry_decorator) and f"{self.registry_decorator}(" in text

    def may_check(self, text: str) -> bool:
        """Whether the text holds every word of an argument check."""
        return bool(self.check_words) and all(word in text for word in self.check_words)


@dataclass(frozen=True)
class Profile:
    name: str
    config_symbols: dict[str, str]
    init_param_symbols: dict[str, str]
    config_object_attrs: tuple[str, ...]
    config_object_names: tuple[str, ...]
    config_functions: tuple[str, ...]
    display: dict[str, str]
    domain: tuple[DomainConstraint, ...]
    default_widths: dict[str, DefaultWidth]
    phase_widths: dict[str, Term]
    phase_modes: dict[str, str]
    width_functions: dict[str, str | None]
    runtime_width_attrs: tuple[str, ...]
    entry_params: dict[str, str]
    forward_batch_attrs: dict[str, str]
    qo_words: tuple[tuple[str, ...], ...]
    grid_words: tuple[tuple[str, ...], ...]
    role_prefixes: frozenset[str]
    role_suffixes: frozenset[str]
    entry_points: frozenset[str]
    mode_members: tuple[str, ...]
    mode_members_if_mentioned: dict[str, str]
    mode_predicates: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]]
    prefilter: tuple[str, ...]
    context_symbols: frozenset[str]
    tree_width_functions: tuple[str, ...]
    runner_width_attrs: tuple[str, ...]
    runner_mode_attrs: tuple[str, ...]
    draft_runner: str
    compare_draft_decode: bool
    kernel_grids: dict[str, tuple[str, str]]
    kernel_block_m: dict[str, tuple[tuple[str, int, int, int], ...]]
    head_dims: tuple[int, ...]
    capture_entries: tuple[str, ...]
    replay_entries: tuple[str, ...]
    eager_entries: tuple[str, ...]
    capture_flag: str
    runner_symbols: dict[str, str]
    # Modes whose requests are packed, each with the most tokens a request can have
    # (`PACKED_MODES` of the profile module).
    packed_modes: dict[str, DefaultWidth] = field(default_factory=dict)
    # A runner's constructor parameter -> (the symbol it stays below, why).
    runner_param_bounds: dict[str, tuple[str, str]] = field(default_factory=dict)
    # A runtime attribute path -> (the modes it is true in, why).
    runtime_facts: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    # Constraints of a mode that hold where the tree states them.
    mode_constraints: tuple[ModeConstraint, ...] = ()
    # Modes only a speculative worker puts a batch in (mode -> why), and the modes whose
    # batches show that the workers are scanned.
    worker_modes: dict[str, str] = field(default_factory=dict)
    worker_evidence: tuple[str, ...] = ()
    # mode -> (algorithms whose servers never run it, a word of every producer's path, why).
    algorithm_modes: dict[str, tuple[tuple[str, ...], str, str]] = field(default_factory=dict)
    idioms: TreeIdioms = field(default_factory=TreeIdioms)
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    # Library calls whose parameters have a role: called name -> (receiver words that exclude
    # it, ((parameter, position or None), ...)).
    role_calls: dict[str, tuple[tuple[str, ...], tuple[tuple[str, int | None], ...]]] = field(
        default_factory=dict
    )
    # Methods that run in given modes whatever their body tests, and the attribute of their
    # class that bounds a request's query tokens there (a project without a mode enum).
    entry_modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    entry_width_bounds: dict[str, str] = field(default_factory=dict)
    # A class attribute holding an enum member -> (the method that reads it, {member: the
    # most query tokens per request of the entries it bounds; 0: they do not run}).
    member_widths: dict[str, tuple[str, dict[str, int]]] = field(default_factory=dict)
    # Functions of the runtime that return integers it computes -> their names.
    runtime_counts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Of those, the functions whose counts are known in a batch of one width per request.
    uniform_splits: dict[str, UniformSplit] = field(default_factory=dict)
    # `Class.method` of a runtime object that pads a token count to a CUDA-graph capture size
    # -> (the count's parameter, its position, the length of the tuple returned, the item that
    # is the batch descriptor, its attribute holding the padded count, the symbol of the
    # largest capture size).
    padding_methods: dict[str, tuple[str, int, int, int, str, str]] = field(default_factory=dict)
    # A function of the runtime that agrees a padded count across data-parallel ranks -> (the
    # padded count's parameter, its position, the length of the tuple returned, the item that is
    # None or the ranks' counts, the flag that must be False, the largest capture size).
    padding_functions: dict[str, tuple[str, int, int, int, str, str]] = field(default_factory=dict)
    # Constraints that hold in the classes `draft_runner` names (or whose bases it names).
    drafter_domain: tuple[DomainConstraint, ...] = ()
    # A runner width attribute -> the modes it is the width of.
    runner_width_modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Runtime lengths that are each request's width in a mode that does not pack.
    width_lengths: tuple[str, ...] = ()
    # Classes whose construction in a runner is the batch it hands the backend.
    runner_batch_classes: tuple[str, ...] = ()
    # Classes whose instances are the configuration object: a property of one named as a
    # runner width attribute states that width (`VllmConfig.uniform_decode_query_len`).
    config_classes: tuple[str, ...] = ()
    # The runtime object whose `runtime_width_attrs` publish the width (`spec_info`).
    width_holder: str = ""
    # Who runs the backend (`idxcheck.facts.algorithms`): the speculative-algorithm enum, the
    # member an unset name parses to, the attributes of runtime objects that hold the server's
    # algorithm, the configuration attributes that name it, the enum's class methods that parse
    # a name, and the attributes that say a draft worker runs the backend.
    algorithm_enum: str = ""
    algorithm_none: str = ""
    algorithm_attrs: tuple[str, ...] = ()
    algorithm_config_attrs: tuple[str, ...] = ()
    algorithm_parsers: tuple[str, ...] = ()
    worker_flags: tuple[str, ...] = ()
    # (the tree's list of backend names a draft worker's factory accepts, the algorithms whose
    # draft workers it builds, names it builds besides); None: no such factory.
    draft_backend_factory: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None = None
    # member -> the words of the message that lists the devices it runs on (`ALGORITHM_DEVICES`).
    algorithm_devices: dict[str, str] = field(default_factory=dict)
    # registry name -> the one device a backend registered under it runs on.
    backend_devices: dict[str, str] = field(default_factory=dict)
    # Constraints that hold where the server runs an algorithm: member -> constraints.
    algorithm_domain: dict[str, tuple[DomainConstraint, ...]] = field(default_factory=dict)
    _role_cache: dict[str, Role | None] = field(default_factory=dict, compare=False, repr=False)

    def declares_algorithm_facts(self, text: str) -> bool:
        """Whether a file's text may hold what `facts.algorithms.AlgorithmModel` reads: the
        speculative-algorithm enum, or the list of the draft backends a factory builds."""
        if self.algorithm_enum and f"class {self.algorithm_enum}" in text:
            return True
        if any(words in text for words in self.algorithm_devices.values()):
            return True
        factory = self.draft_backend_factory
        return factory is not None and any(
            f"{name} = {bracket}" in text for name in factory[0] for bracket in "[("
        )

    def role_of(self, name: str) -> Role | None:
        """The role of a variable, attribute, keyword or key name, by its words; None when it
        has none."""
        if name in self._role_cache:
            return self._role_cache[name]
        words = tuple(w for w in name.lower().split("_") if w)
        role: Role | None = None
        for role_name, patterns in ((Role.QO, self.qo_words), (Role.GRID, self.grid_words)):
            for pattern in patterns:
                n = len(pattern)
                for i in range(len(words) - n + 1):
                    if words[i : i + n] == pattern:
                        before, after = words[:i], words[i + n :]
                        if all(w in self.role_prefixes for w in before) and all(
                            w in self.role_suffixes for w in after
                        ):
                            role = role_name
                        break
                if role:
                    break
            if role:
                break
        self._role_cache[name] = role
        return role

    def symbol_order(self) -> list[str]:
        return list(self.display)


# Modules of this package that are not profiles.
NOT_PROFILES = frozenset({"schema", "constants"})


def available_profiles() -> tuple[str, ...]:
    """The profiles of this package: each module but the schema's."""
    import pkgutil

    import idxcheck.profiles as package

    return tuple(
        sorted(
            m.name
            for m in pkgutil.iter_modules(package.__path__)
            if m.name not in NOT_PROFILES and not m.name.startswith("_")
        )
    )


def package_profiles() -> dict[str, str]:
    """Package folder name -> the profile whose files are under it (each profile's
    `PACKAGES`), for `profile = "auto"`."""
    table: dict[str, str] = {}
    for name in available_profiles():
        module = importlib.import_module(f"idxcheck.profiles.{name}")
        for package in getattr(module, "PACKAGES", ()):
            table.setdefault(package, name)
    return table


def load_profile(name: str = "sglang", overrides: dict[str, Any] | None = None) -> Profile:
    if name not in available_profiles():
        # Only a name of the list: any other (`__init__`, a dotted path) would import
        # something that is not a profile.
        raise ValueError(f"unknown profile {name!r}; profiles: {', '.join(available_profiles())}")
    module = importlib.import_module(f"idxcheck.profiles.{name}")
    return profile_from_module(module, overrides or {})


# One keyword per constant of the schema, read in one place that the schema test checks
# against the table (hence its length).
def profile_from_module(module: ModuleType, overrides: dict[str, Any]) -> Profile:
    aliases = {short: long for long, short in module.DISPLAY.items() if short != long}
    # A user's constraint or width names the profile's symbols (or their short names): any
    # other name is an error, not a free symbol that constrains nothing.
    symbols = frozenset(module.DISPLAY)
    domain_entries: list[tuple[str, str]] = list(module.DOMAIN)
    if overrides.get("replace_domain"):
        domain_entries = []
    for text in overrides.get("domain", []):
        parse_formula(text, aliases, symbols)
        domain_entries.append((text, "[tool.idxcheck] domain"))
    domain = tuple(DomainConstraint(t, why, parse_formula(t, aliases)) for t, why in domain_entries)
    widths = dict(module.DEFAULT_WIDTHS)
    for mode, text in overrides.get("widths", {}).items():
        if mode not in module.MODE_MEMBERS:
            raise ConstraintError(
                f"unknown forward mode {mode!r}; modes of the {module.NAME} profile: "
                f"{', '.join(module.MODE_MEMBERS)}"
            )
        parse_term(text, aliases, symbols)
        widths[mode] = (text, "[tool.idxcheck] widths")
    return Profile(
        name=module.NAME,
        config_symbols=dict(module.CONFIG_SYMBOLS),
        init_param_symbols=dict(module.INIT_PARAM_SYMBOLS),
        config_object_attrs=tuple(module.CONFIG_OBJECT_ATTRS),
        config_object_names=tuple(module.CONFIG_OBJECT_NAMES),
        config_functions=tuple(module.CONFIG_FUNCTIONS),
        display=dict(module.DISPLAY),
        domain=domain,
        default_widths={
            mode: DefaultWidth(mode, parse_term(text, aliases), text, source)
            for mode, (text, source) in widths.items()
        },
        phase_widths={p: parse_term(t, aliases) for p, t in module.PHASE_WIDTHS.items()},
        phase_modes=dict(module.PHASE_MODES),
        width_functions=dict(module.WIDTH_FUNCTIONS),
        runtime_width_attrs=tuple(module.RUNTIME_WIDTH_ATTRS),
        entry_params=dict(module.ENTRY_PARAMS),
        forward_batch_attrs=dict(module.FORWARD_BATCH_ATTRS),
        qo_words=tuple(module.QO_INDPTR_WORDS),
        grid_words=tuple(module.GRID_WORDS),
        role_prefixes=frozenset(module.ROLE_PREFIXES),
        role_suffixes=frozenset(module.ROLE_SUFFIXES),
        entry_points=frozenset(module.ENTRY_POINTS),
        mode_members=tuple(module.MODE_MEMBERS),
        mode_members_if_mentioned=dict(getattr(module, "MODE_MEMBERS_IF_MENTIONED", {})),
        mode_predicates=dict(module.MODE_PREDICATES),
        prefilter=tuple(module.PREFILTER),
        context_symbols=frozenset(module.CONTEXT_SYMBOLS),
        tree_width_functions=tuple(module.TREE_WIDTH_FUNCTIONS),
        runner_width_attrs=tuple(module.RUNNER_WIDTH_ATTRS),
        runner_mode_attrs=tuple(module.RUNNER_MODE_ATTRS),
        draft_runner=module.DRAFT_RUNNER,
        drafter_domain=tuple(
            DomainConstraint(t, why, parse_formula(t, aliases))
            for t, why in getattr(module, "DRAFTER_DOMAIN", ())
        ),
        compare_draft_decode=bool(getattr(module, "COMPARE_DRAFT_DECODE", False)),
        kernel_grids=dict(getattr(module, "KERNEL_GRIDS", {})),
        kernel_block_m=dict(getattr(module, "KERNEL_BLOCK_M", {})),
        head_dims=tuple(getattr(module, "HEAD_DIMS", ())),
        capture_entries=tuple(getattr(module, "CAPTURE_ENTRIES", ())),
        replay_entries=tuple(getattr(module, "REPLAY_ENTRIES", ())),
        eager_entries=tuple(getattr(module, "EAGER_ENTRIES", ())),
        capture_flag=getattr(module, "CAPTURE_FLAG", ""),
        runner_symbols=dict(getattr(module, "RUNNER_SYMBOLS", {})),
        packed_modes={
            mode: DefaultWidth(mode, parse_term(text, aliases), text, source)
            for mode, (text, source) in getattr(module, "PACKED_MODES", {}).items()
        },
        runner_param_bounds=dict(getattr(module, "RUNNER_PARAM_BOUNDS", {})),
        runtime_facts=dict(getattr(module, "RUNTIME_FACTS", {})),
        mode_constraints=tuple(
            ModeConstraint(mode, text, parse_formula(text, aliases), words, why, also)
            for mode, entries in getattr(module, "MODE_CONSTRAINTS", {}).items()
            for text, words, also, why in entries
        ),
        worker_modes=dict(getattr(module, "WORKER_MODES", {})),
        worker_evidence=tuple(getattr(module, "WORKER_EVIDENCE", ())),
        algorithm_modes={
            mode: (tuple(members), str(word), str(why))
            for mode, (members, word, why) in getattr(module, "ALGORITHM_MODES", {}).items()
        },
        idioms=_idioms(module),
        launch=LaunchSpec(
            command=getattr(module, "LAUNCH_COMMAND", ""),
            backend=getattr(module, "LAUNCH_BACKEND", ""),
            settings={k: tuple(v) for k, v in getattr(module, "LAUNCH_SETTINGS", {}).items()},
            only_positive=frozenset(getattr(module, "LAUNCH_ONLY_POSITIVE", ())),
            modes={k: tuple(v) for k, v in getattr(module, "LAUNCH_MODES", {}).items()},
            algorithm=getattr(module, "LAUNCH_ALGORITHM", ""),
            draft_worker=tuple(getattr(module, "LAUNCH_DRAFT_WORKER", ())),
        ),
        algorithm_enum=getattr(module, "ALGORITHM_ENUM", ""),
        algorithm_none=getattr(module, "ALGORITHM_NONE", ""),
        algorithm_attrs=tuple(getattr(module, "ALGORITHM_ATTRS", ())),
        algorithm_config_attrs=tuple(getattr(module, "ALGORITHM_CONFIG_ATTRS", ())),
        algorithm_parsers=tuple(getattr(module, "ALGORITHM_PARSERS", ())),
        worker_flags=tuple(getattr(module, "WORKER_FLAGS", ())),
        draft_backend_factory=_factory(getattr(module, "DRAFT_BACKEND_FACTORY", None)),
        algorithm_devices=dict(getattr(module, "ALGORITHM_DEVICES", {})),
        backend_devices=dict(getattr(module, "BACKEND_DEVICES", {})),
        algorithm_domain={
            member: tuple(DomainConstraint(t, why, parse_formula(t, aliases)) for t, why in rows)
            for member, rows in getattr(module, "ALGORITHM_DOMAIN", {}).items()
        },
        width_lengths=tuple(getattr(module, "WIDTH_LENGTHS", ())),
        runner_batch_classes=tuple(getattr(module, "RUNNER_BATCH_CLASSES", ())),
        config_classes=tuple(getattr(module, "CONFIG_CLASSES", ())),
        width_holder=getattr(module, "WIDTH_HOLDER", ""),
        role_calls={
            name: (tuple(excluded), tuple(params))
            for name, (excluded, params) in getattr(module, "ROLE_CALLS", {}).items()
        },
        entry_modes={
            name: tuple(modes) for name, modes in getattr(module, "ENTRY_MODES", {}).items()
        },
        entry_width_bounds=dict(getattr(module, "ENTRY_WIDTH_BOUNDS", {})),
        member_widths={
            attr: (reader, dict(widths))
            for attr, (reader, widths) in getattr(module, "MEMBER_WIDTHS", {}).items()
        },
        runtime_counts={
            name: tuple(items) for name, items in getattr(module, "RUNTIME_COUNTS", {}).items()
        },
        uniform_splits=_uniform_splits(module),
        padding_methods=_padding(getattr(module, "PADDING_METHODS", {})),
        padding_functions=_padding(getattr(module, "PADDING_FUNCTIONS", {})),
        runner_width_modes={
            attr: tuple(modes) for attr, modes in getattr(module, "RUNNER_WIDTH_MODES", {}).items()
        },
    )


def _factory(value: Any) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
    if value is None:
        return None
    names, algorithms, besides = value
    names = (names,) if isinstance(names, str) else tuple(names)
    return names, tuple(algorithms), tuple(besides)


_SPLIT_COUNTS = frozenset({"requests", "tokens", "none"})


def _uniform_splits(module: ModuleType) -> dict[str, UniformSplit]:
    """UNIFORM_SPLITS, each a function of RUNTIME_COUNTS with a known answer for every count."""
    counts = getattr(module, "RUNTIME_COUNTS", {})
    found: dict[str, UniformSplit] = {}
    table = getattr(module, "UNIFORM_SPLITS", {})
    for name, (threshold, position, default, flags, below, above) in table.items():
        names = counts.get(name)
        if names is None or not len(names) == len(below) == len(above):
            raise ValueError(f"UNIFORM_SPLITS[{name!r}]: one answer per count of RUNTIME_COUNTS")
        if not set(below) | set(above) <= _SPLIT_COUNTS:
            raise ValueError(f"UNIFORM_SPLITS[{name!r}]: counts are {sorted(_SPLIT_COUNTS)}")
        found[name] = UniformSplit(
            str(threshold),
            int(position),
            int(default),
            tuple((str(f), int(at), bool(value)) for f, at, value in flags),
            tuple(below),
            tuple(above),
        )
    return found


def _padding(table: dict[str, Any]) -> dict[str, tuple[str, int, int, int, str, str]]:
    """PADDING_METHODS or PADDING_FUNCTIONS: name -> (the count's parameter, its position, the
    length of the tuple returned, the item that holds the padded count, a name, a symbol)."""
    return {
        name: (str(param), int(position), int(length), int(item), str(other), str(bound))
        for name, (param, position, length, item, other, bound) in table.items()
    }


def _pattern(module: ModuleType, name: str) -> re.Pattern[str] | None:
    text = getattr(module, name, None)
    return re.compile(text) if text else None


def _idioms(module: ModuleType) -> TreeIdioms:
    forced = getattr(module, "FORCED_ASSIGNMENT", None)
    selector = getattr(module, "DRAFT_DECODE_SELECTOR", None)
    return TreeIdioms(
        mode_enum=getattr(module, "MODE_ENUM", ""),
        tree_fact_words=tuple(tuple(words) for words in getattr(module, "TREE_FACT_WORDS", ())),
        batch_mode_words=tuple(getattr(module, "BATCH_MODE_WORDS", ())),
        batch_mode_assigned=_pattern(module, "BATCH_MODE_ASSIGNED"),
        batch_mode_keyword=_pattern(module, "BATCH_MODE_KEYWORD"),
        batch_mode_member=_pattern(module, "BATCH_MODE_MEMBER"),
        runner_mode_keyword=_pattern(module, "RUNNER_MODE_KEYWORD"),
        draft_decode_mode=getattr(module, "DRAFT_DECODE_MODE", ""),
        draft_decode_selector=tuple(selector) if selector else None,
        registry_decorator=getattr(module, "REGISTRY_DECORATOR", ""),
        backend_selector=getattr(module, "BACKEND_SELECTOR", ""),
        check_words=tuple(getattr(module, "CHECK_WORDS", ())),
        check_config_names=tuple(getattr(module, "CHECK_CONFIG_NAMES", ())),
        forced_assignment=re.compile(forced[0]) if forced else None,
        forced_text=forced[1] if forced else "",
    )
