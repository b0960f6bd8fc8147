"""The schema of a profile module: every constant a project's profile (`idxcheck.profiles.<name>`)
may define, whether it must, and what it says. `schema.profile_from_module` reads these into a
`Profile`; the tests check that a profile defines nothing else and that this table and the
reader agree, and docs/profiles.md is generated from it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Constant:
    name: str
    required: bool
    doc: str


def _c(name: str, doc: str, required: bool = False) -> Constant:
    return Constant(name, required, doc)


CONSTANTS: tuple[Constant, ...] = (
    # The project and its configuration.
    _c("NAME", "The profile's name, as `--profile` and `[tool.idxcheck] profile` spell it.", True),
    _c(
        "PACKAGES",
        "Package folder names (a folder holding `__init__.py`) whose files this profile scans "
        "when the profile is `auto`.",
    ),
    _c(
        "CONFIG_SYMBOLS",
        "Configuration attribute (as read from a configuration object) -> the domain symbol it is.",
        True,
    ),
    _c(
        "INIT_PARAM_SYMBOLS",
        "Constructor parameters that carry a configuration value directly -> symbol.",
        True,
    ),
    _c(
        "CONFIG_OBJECT_ATTRS",
        "Attributes of runtime objects that are configuration objects (`model_runner.server_args`).",
        True,
    ),
    _c("CONFIG_OBJECT_NAMES", "Parameters or locals by that name are configuration objects.", True),
    _c("CONFIG_FUNCTIONS", "Functions that return a configuration object.", True),
    _c(
        "DISPLAY",
        "Every domain symbol, in the order a counterexample is minimised and printed -> its short name in reports.",
        True,
    ),
    _c(
        "CONTEXT_SYMBOLS",
        "Symbols a counterexample shows only when the failing obligation itself mentions them.",
        True,
    ),
    _c(
        "DOMAIN",
        "The configuration domain: (constraint in Python expression syntax over the symbols, why). `implies(a, b)` reads a -> b.",
        True,
    ),
    # Runtime widths.
    _c(
        "DEFAULT_WIDTHS",
        "Mode -> (tokens per request, source): the runtime width when the scanned tree has no runner for the mode.",
        True,
    ),
    _c(
        "PACKED_MODES",
        "Mode -> (most tokens a request can have, source): modes that pack requests of varying length.",
    ),
    _c("PHASE_WIDTHS", "Phase of a width function -> its width term.", True),
    _c("PHASE_MODES", "Phase -> the forward mode it is the width of.", True),
    _c(
        "WIDTH_FUNCTIONS",
        "Functions that give the runtime's width: name -> phase (None: from a `phase=` keyword; `arg:NAME`: that argument).",
        True,
    ),
    _c(
        "TREE_WIDTH_FUNCTIONS",
        "Width functions interpreted from their definition when the scanned tree has it.",
        True,
    ),
    _c(
        "RUNTIME_WIDTH_ATTRS",
        "Attributes of runtime objects that are the per-forward width of the current layout.",
        True,
    ),
    _c(
        "RUNTIME_FACTS",
        "Runtime attribute path -> (modes it is true in, why): a branch for its absence does not run there.",
    ),
    # Entry points and what the runtime passes.
    _c(
        "ENTRY_POINTS",
        "Backend methods the runtime calls (entry points even when another method calls them).",
        True,
    ),
    _c(
        "ENTRY_MODES",
        "Method -> the modes it runs in, whatever its body tests (a project without a mode enum: the entry point says the phase).",
    ),
    _c(
        "MEMBER_WIDTHS",
        "Class attribute holding an enum member -> (the method that reads it, {member: the most query tokens per request in the entries it bounds; 0: they do not run}): read where that method returns the attribute itself.",
    ),
    _c(
        "RUNTIME_COUNTS",
        "Function of the runtime -> the names of the integers it returns (a tuple of them): one runtime value per name wherever it is read.",
    ),
    _c(
        "UNIFORM_SPLITS",
        "Function of `RUNTIME_COUNTS` that splits a batch by each request's query tokens -> (the threshold's parameter, its position, its default, the flags (parameter, position, default) that must keep their default, each count when every request is at most the threshold, each count when none is: `requests`, `tokens` or `none`): in a phase whose requests all carry the runtime width the counts are known.",
    ),
    _c(
        "PADDING_METHODS",
        "`Class.method` of a runtime object that pads a token count up to a CUDA-graph capture size -> (the count's parameter, its position, the length of the tuple returned, the item that is the batch descriptor, its attribute holding the padded count, the symbol of the largest capture size): the padded count is at least the count and, where the count is at most that size, at most it; above it, the count itself.",
    ),
    _c(
        "PADDING_FUNCTIONS",
        "Function of the runtime that agrees a padded token count across data-parallel ranks -> (the padded count's parameter, its position, the length of the tuple returned, the item that is None or the ranks' counts, the flag parameter that must be False for the model to hold, the symbol of the largest capture size): this rank's count is the one passed or, where that is at most that size, one at most it.",
    ),
    _c(
        "ENTRY_WIDTH_BOUNDS",
        "Method -> the attribute of its class that bounds the query tokens of a request there (read where the class sets it).",
    ),
    _c(
        "ENTRY_PARAMS",
        "Entry point parameter -> kind (`forward_batch`, `mode`, `bs`, `max_bs`, `num_tokens`, `max_num_tokens`, `runtime`, `tensor_bs`, `tensor_tokens`, `tensor`; `tensor_qo`: the runtime's query index pointer, and `max_width`: its widest request, uniform of the runtime width in the modes with a default width but packed ones).",
        True,
    ),
    _c(
        "FORWARD_BATCH_ATTRS", "Attribute of the forward batch -> kind (as for ENTRY_PARAMS).", True
    ),
    _c("CAPTURE_ENTRIES", "Entry points that build metadata at CUDA-graph capture."),
    _c("REPLAY_ENTRIES", "Entry points that refill it before each replay."),
    _c("EAGER_ENTRIES", "Entry points that build it for eager runs."),
    _c(
        "CAPTURE_FLAG",
        "The opaque runtime condition that tells capture from replay in an entry point that does both.",
    ),
    # Roles by name.
    _c(
        "QO_INDPTR_WORDS",
        "Word sequences of query index-pointer names (a name is split at underscores).",
        True,
    ),
    _c("GRID_WORDS", "Word sequences of grid-scalar names.", True),
    _c("ROLE_PREFIXES", "Words a role name may have before its sequence.", True),
    _c("ROLE_SUFFIXES", "Words a role name may have after its sequence.", True),
    _c(
        "PREFILTER",
        "A file can hold something idxcheck reads only if it contains one of these words.",
        True,
    ),
    # Forward modes.
    _c(
        "MODE_ENUM",
        "The forward-mode enum class of the tree (read when the scanned tree defines it).",
    ),
    _c(
        "MODE_MEMBERS",
        "The default mode model's members, in order (used when the tree has no mode enum).",
        True,
    ),
    _c(
        "MODE_MEMBERS_IF_MENTIONED",
        "Member -> pattern: members of the default model only where the scanned files mention them.",
    ),
    _c(
        "MODE_PREDICATES",
        "Predicate method -> (members always included, {flag parameter: members included when it is true}).",
        True,
    ),
    _c(
        "MODE_CONSTRAINTS",
        "Mode -> ((constraint, words that state it, the mode its runners must also capture in, why), ...): constraints that hold where the tree states them.",
    ),
    _c("WORKER_MODES", "Mode -> why: modes only a speculative worker puts a batch in."),
    _c(
        "WORKER_EVIDENCE",
        "Modes whose batches show that the tree's speculative workers are scanned.",
    ),
    # Graph runners.
    _c(
        "RUNNER_WIDTH_ATTRS",
        "Attributes of a graph runner that hold the tokens per request it captures.",
        True,
    ),
    _c(
        "RUNNER_MODE_ATTRS",
        "Attributes of a graph runner that hold the forward mode it captures in.",
        True,
    ),
    _c(
        "RUNNER_MODE_KEYWORD",
        "Pattern of the mode a runner captures in when no runner mode attribute says it (group 1: the member).",
    ),
    _c(
        "RUNNER_WIDTH_MODES",
        "Runner width attribute -> the modes it is the width of, where no runner mode attribute or keyword says it.",
    ),
    _c("DRAFT_RUNNER", "Pattern of the class names of runners that run in a draft worker.", True),
    _c(
        "DRAFTER_DOMAIN",
        "Constraints (in DOMAIN's form: (constraint, why)) that hold in the classes DRAFT_RUNNER names, or whose bases it names: a drafter is built only where they hold.",
    ),
    _c("COMPARE_DRAFT_DECODE", "Whether draft-decode runners are compared with backends."),
    _c("DRAFT_DECODE_MODE", "The mode whose draft and target runners serve different batches."),
    _c(
        "DRAFT_DECODE_SELECTOR",
        "(key, text) of the opaque runtime condition that holds for the target's batches in that mode.",
    ),
    _c("RUNNER_SYMBOLS", "Runtime attributes a runner adds to its width -> domain symbol."),
    _c(
        "RUNNER_BATCH_CLASSES",
        "Classes whose construction in a runner is the batch it hands the backend: lengths of "
        "`WIDTH_LENGTHS` that every such construction sets to a value that is never None are "
        "taken as present in the runs compared with that runner's width.",
    ),
    _c(
        "CONFIG_CLASSES",
        "Classes whose instances are the configuration object: in their methods `self` is one, "
        "and a property named as a `RUNNER_WIDTH_MODES` attribute states that width for its "
        "modes.",
    ),
    _c("RUNNER_PARAM_BOUNDS", "Runner constructor parameter -> (the symbol it stays below, why)."),
    # Kernels.
    _c("KERNEL_GRIDS", "Grid-scalar name -> (launcher, its parameter that sizes the grid)."),
    _c(
        "KERNEL_BLOCK_M",
        "Launcher -> ((arch, smallest head dim, largest head dim, BLOCK_M), ...): its block-size table.",
    ),
    _c("HEAD_DIMS", "Head dimensions of the models the kernels serve."),
    # How an operator sets the configuration of a counterexample.
    _c(
        "LAUNCH_COMMAND",
        "The command that starts the project's server (a finding's launch line begins with it).",
    ),
    _c(
        "LAUNCH_BACKEND",
        "The setting that selects an attention backend by its registered name (`{}`: the name).",
    ),
    _c(
        "LAUNCH_SETTINGS",
        "Symbol -> its settings: `--flag {}` (`{}`: the value), `NAME=value` (environment), `model: ...`, `runtime: ...`.",
    ),
    _c("LAUNCH_ONLY_POSITIVE", "Symbols whose settings apply only when the value is above zero."),
    _c("LAUNCH_MODES", "Mode -> the settings a batch in that mode takes."),
    _c(
        "LAUNCH_ALGORITHM",
        "The setting that selects the speculative algorithm (`{}`: the member): it replaces the setting of the same flag in `LAUNCH_MODES` where a counterexample needs an algorithm.",
    ),
    _c(
        "LAUNCH_DRAFT_WORKER",
        "The settings a counterexample that needs a draft worker to run the backend takes.",
    ),
    # Who runs the backend.
    _c(
        "ALGORITHM_ENUM",
        "The speculative-algorithm enum class, read from the scanned tree (members and predicates, as the mode enum's): the algorithm is a condition backends and runners share.",
    ),
    _c("ALGORITHM_NONE", "The member of `ALGORITHM_ENUM` that an unset algorithm name parses to."),
    _c(
        "ALGORITHM_ATTRS",
        "Attributes of runtime objects that hold the server's speculative algorithm (a member of `ALGORITHM_ENUM`).",
    ),
    _c(
        "ALGORITHM_CONFIG_ATTRS",
        "Configuration attributes that hold the algorithm's name (parsed by `ALGORITHM_PARSERS`).",
    ),
    _c(
        "ALGORITHM_PARSERS",
        "Class methods of `ALGORITHM_ENUM` that parse a name into a member.",
    ),
    _c(
        "ALGORITHM_DOMAIN",
        "Member of `ALGORITHM_ENUM` -> ((constraint, why), ...): the domain where the server runs that algorithm.",
    ),
    _c(
        "DRAFT_BACKEND_FACTORY",
        "(the names the module-level list or tuple of attention backend names that a draft worker's factory accepts goes by in the scanned tree, one per release that renamed it; the algorithms whose draft workers it builds; names it builds besides): a backend registered under none of them is never run by such a draft worker.",
    ),
    _c(
        "ALGORITHM_DEVICES",
        "Member of `ALGORITHM_ENUM` -> the words the tree's error message that lists the devices it runs on starts with (read from the tree; nothing is assumed where it is not found).",
    ),
    _c(
        "BACKEND_DEVICES",
        "Registry name of an attention backend built for one device -> that device: a backend registered only under such names never runs with an algorithm its device does not support (`ALGORITHM_DEVICES`).",
    ),
    _c(
        "ALGORITHM_MODES",
        "Mode -> (members of `ALGORITHM_ENUM` whose servers never run it, a word of the path of every file that puts a batch in it, why): checked against the files that put a batch in the mode.",
    ),
    _c(
        "WORKER_FLAGS",
        "Attributes of runtime objects that are true where a draft worker runs the backend (and its graph runners): one condition backends and runners share.",
    ),
    _c(
        "WIDTH_HOLDER",
        "The runtime object whose attributes (`RUNTIME_WIDTH_ATTRS`) publish the width per "
        "forward: a fix may read the width there where the finding's function holds it.",
    ),
    _c(
        "WIDTH_LENGTHS",
        "Runtime attributes whose lengths are each request's width in a mode that does not pack (the forward's extend lengths).",
    ),
    _c(
        "ROLE_CALLS",
        "Library calls whose parameters have a role: called name -> (receiver words that "
        "exclude it, ((parameter, position or None), ...)). A value handed to one has the "
        "parameter's role.",
    ),
    # How the tree states its own facts.
    _c("TREE_FACT_WORDS", "Word groups: a file holding every word of one is read for tree facts."),
    _c("BATCH_MODE_WORDS", "Words of a file that may put a batch in a mode."),
    _c("BATCH_MODE_ASSIGNED", "Pattern of an assignment of a batch's mode."),
    _c("BATCH_MODE_KEYWORD", "Pattern of a batch built in a mode (group 1: the member)."),
    _c(
        "BATCH_MODE_MEMBER", "Pattern of a member named in an assigned value (group 1: the member)."
    ),
    _c("REGISTRY_DECORATOR", "The decorator that registers an attention backend by name."),
    _c("BACKEND_SELECTOR", "The configuration attribute that selects an attention backend."),
    _c("CHECK_WORDS", "Words a file holding an argument check has."),
    _c("CHECK_CONFIG_NAMES", "Names configuration objects have inside an argument check."),
    _c(
        "FORCED_ASSIGNMENT", "(pattern, citation) of an assignment that forces a domain constraint."
    ),
)

BY_NAME = {c.name: c for c in CONSTANTS}


def markdown() -> str:
    """docs/profiles.md's table of constants."""
    rows = ["| constant | required | what it says |", "|---|---|---|"]
    for c in CONSTANTS:
        rows.append(f"| `{c.name}` | {'yes' if c.required else ''} | {c.doc} |")
    return "\n".join(rows) + "\n"
