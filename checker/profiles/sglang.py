"""The SGLang project profile: what the scanned tree does not say, as data.

- which configuration attributes are symbols of the domain, and their short display names;
- the domain of those symbols (DOMAIN.md section 3), as constraint expressions that a user can
  override or extend in `[tool.idxcheck]`;
- the names under which backends bind query index pointers and grid scalars;
- what the runtime passes to a backend (forward batch attributes, `spec_info`), and which of its
  attributes are widths published per forward;
- a default `ForwardMode` model, used only when the scanned tree has no `ForwardMode` enum;
- default query tokens per request for each forward mode, used only when the scanned tree has
  no graph runner for that mode (the finding then says so).

Facts were read off SGLang releases 0.5.12, 0.5.13 and 0.5.23 from PyPI."""

from __future__ import annotations

NAME = "sglang"

# Configuration attribute (as read from `server_args`, `get_spec()`, ...) -> symbol.
CONFIG_SYMBOLS: dict[str, str] = {
    "speculative_num_steps": "speculative_num_steps",
    "speculative_eagle_topk": "speculative_eagle_topk",
    "speculative_num_draft_tokens": "speculative_num_draft_tokens",
    "page_size": "page_size",
}

# Constructor parameters that carry a configuration value directly
# (`TritonMultiStepDraftBackend(model_runner, topk, speculative_num_steps)`).
INIT_PARAM_SYMBOLS: dict[str, str] = {
    "topk": "speculative_eagle_topk",
    "speculative_eagle_topk": "speculative_eagle_topk",
    "speculative_num_steps": "speculative_num_steps",
    "num_draft_tokens": "speculative_num_draft_tokens",
    "speculative_num_draft_tokens": "speculative_num_draft_tokens",
    "page_size": "page_size",
}

# Names by which configuration objects are reached.
CONFIG_OBJECT_ATTRS = ("server_args",)  # model_runner.server_args
CONFIG_OBJECT_NAMES = ("server_args",)  # a parameter or local called server_args
CONFIG_FUNCTIONS = ("get_spec", "get_global_server_args", "get_server_args")

# Symbols of the domain, in the order a counterexample is minimised and printed, with the
# short names used in reports.
DISPLAY: dict[str, str] = {
    "bs": "bs",
    "speculative_eagle_topk": "topk",
    "speculative_num_steps": "num_steps",
    "speculative_num_draft_tokens": "num_draft_tokens",
    "dllm_block_size": "block_size",
    "page_size": "page_size",
    "max_bs": "max_bs",
    "head_dim": "head_dim",
    "num_front_tokens": "num_front_tokens",
    "sm": "sm",
}

# Symbols a counterexample shows only when the failing obligation itself mentions them (they
# enter through domain constraints such as `bs <= max_bs`).
CONTEXT_SYMBOLS = ("max_bs", "page_size", "num_front_tokens")

# The configuration domain. Each entry is a constraint in Python expression syntax over the
# symbols above; `implies(a, b)` reads "a -> b". Upper bounds keep the non-linear tree-size
# constraint decidable; they are far above what SGLang accepts in practice.
DOMAIN: tuple[tuple[str, str], ...] = (
    ("bs >= 1", "a batch holds at least one request"),
    ("bs <= max_bs", "a replayed batch fits the largest captured batch"),
    ("max_bs <= 4096", "explored range"),
    ("speculative_num_steps >= 1", "server_args: speculative_num_steps >= 1"),
    ("speculative_num_steps <= 32", "explored range"),
    ("speculative_eagle_topk >= 1", "server_args: speculative_eagle_topk >= 1"),
    ("speculative_eagle_topk <= 16", "explored range"),
    ("speculative_num_draft_tokens >= 2", "one verified token plus at least one draft"),
    (
        "speculative_num_draft_tokens <= 128",
        "explored range: SGLang's EAGLE trees are configured with at most a few dozen draft tokens",
    ),
    (
        "implies(speculative_eagle_topk == 1, "
        "speculative_num_draft_tokens == speculative_num_steps + 1)",
        "topk == 1 forces num_draft_tokens = num_steps + 1 (server_args / speculative_hook)",
    ),
    (
        "implies(speculative_eagle_topk > 1, speculative_num_draft_tokens - 1 <= "
        "speculative_eagle_topk + (speculative_num_steps - 1) * speculative_eagle_topk "
        "* speculative_eagle_topk)",
        "the tree builder picks num_draft_tokens - 1 of topk + (steps-1)*topk^2 candidates",
    ),
    ("dllm_block_size >= 1", "dLLM block size"),
    ("dllm_block_size <= 1024", "explored range"),
    ("page_size >= 1", "page size"),
    ("num_front_tokens >= 0", "multi-layer EAGLE draft-extend front rows"),
    (
        "implies(num_front_tokens > 0, speculative_eagle_topk == 1 and speculative_num_steps > 1)",
        "the boundary-KV fix widens the draft-extend window only for chain drafts (topk == 1) "
        "of more than one step (multi_layer_eagle_worker_v2._init_boundary_kv_fix_state)",
    ),
    (
        "implies(num_front_tokens > 0, num_front_tokens >= speculative_num_steps - 1)",
        "front = num_steps - 1 + conv warm-up",
    ),
)

# Runtime width per forward mode when the scanned tree has no runner for it: (term, where
# the fact comes from). Modes without an entry have no fixed width (EXTEND, MIXED: one per
# request, varying) or a width that depends on which worker runs the backend (DECODE: 1 on
# the target, topk on the draft); sites in those modes are compared only with runners read
# from the tree.
DEFAULT_WIDTHS: dict[str, tuple[str, str]] = {
    "TARGET_VERIFY": (
        "speculative_num_draft_tokens",
        "SGLang profile: the target-verify graph runner lays out num_draft_tokens per request",
    ),
    "DRAFT_EXTEND_V2": (
        "speculative_num_draft_tokens",
        "SGLang profile: the draft-extend (v2) graph runner lays out num_draft_tokens per "
        "request (0.5.13 and later)",
    ),
    "DRAFT_EXTEND": (
        "speculative_num_steps + 1",
        "SGLang profile: the EAGLE v1 draft-extend runner lays out num_steps + 1 per request",
    ),
    "DLLM_EXTEND": (
        "dllm_block_size",
        "SGLang profile: dLLM extends one block of block_size tokens per request",
    ),
}

# Modes whose requests carry a varying number of query tokens, one request's right after the
# last's: mode -> (the most tokens a request can have, where the fact comes from). A runner's
# per-request width in such a mode is what it captures with (every request full) and sizes its
# buffers for; it can be more than a request ever carries. Grid scalars, frozen at capture,
# must cover the most tokens a request can have; and a layout from runtime lengths at replay
# agrees with a uniform one built at capture.
PACKED_MODES: dict[str, tuple[str, str]] = {
    "DRAFT_EXTEND": (
        "min(speculative_num_steps + 1, speculative_num_draft_tokens)",
        "SGLang profile: EAGLE v1 draft extend packs each request's accepted tokens, a path "
        "of the verified tree plus its bonus token (`prepare_extend_after_decode`: "
        "extend_lens = the accepted counts)",
    ),
}

# Runtime values that are true (non-empty) in the modes given, read from the runtime's code:
# attribute path (matched at the end of what a backend reads) -> (modes, why). A condition
# that tests one is assumed true there, so a branch for its absence does not reach a site.
RUNTIME_FACTS: dict[str, tuple[tuple[str, ...], str]] = {
    attr: (
        ("DRAFT_EXTEND",),
        "the EAGLE v1 worker hands the draft extend one accepted count per request, and a "
        "batch without requests runs as IDLE (`forward_draft_extend_after_decode`)",
    )
    # The name of each release: `accept_length_cpu` to 0.5.10, `num_accepted_tokens_cpu` in
    # 0.5.11, `num_accept_tokens_cpu` from 0.5.12.
    for attr in (
        "spec_info.accept_length_cpu",
        "spec_info.num_accepted_tokens_cpu",
        "spec_info.num_accept_tokens_cpu",
    )
}

# Constraints that hold in one mode where the scanned tree says so: mode -> ((the constraint,
# words of the tree's text that state it, the other mode a runner must also capture in for the
# constraint to hold against it, why), ...). `read_constraints` looks for the words in every
# file; where it finds them, the constraint narrows that mode's obligations against such
# runners, and the findings cite the place. A tree that does not state it (0.5.13 and later
# run topk > 1 on the v2 workers) gets no constraint.
MODE_CONSTRAINTS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "DRAFT_EXTEND_V2": (
        (
            "speculative_eagle_topk == 1",
            "v2 currently only supports topk = 1",
            # The EAGLE draft-extend runner captures in DRAFT_EXTEND for a v1 worker and in
            # DRAFT_EXTEND_V2 for a v2 one; the multi-layer runner captures in DRAFT_EXTEND_V2
            # for the v1 multi-layer worker too (`--enable-multi-layer-eagle` without the
            # overlap scheduler, or 0.5.12's topk > 1), where topk > 1 is not rejected.
            "DRAFT_EXTEND",
            "the server arguments reject topk > 1 with spec v2 (0.5.9, 0.5.10) or run it on "
            "the v1 workers (0.5.12), saying `spec v2 currently only supports topk = 1`; a "
            "runner that captures in DRAFT_EXTEND for a v1 worker captures in DRAFT_EXTEND_V2 "
            "only for a v2 one",
        ),
    ),
}

# Modes only a speculative worker puts a batch in (a graph runner replays the batches it is
# handed, in their mode): mode -> why. Where the scanned tree puts a batch in one of the
# `WORKER_EVIDENCE` modes (its speculative workers are scanned), such a mode that no code puts
# a batch in does not run, and no obligation is made in it (`idxcheck.facts.batch_modes`).
WORKER_MODES: dict[str, str] = {
    "DRAFT_EXTEND": (
        "the EAGLE v1 workers put a batch in it, `batch.forward_mode = ForwardMode.DRAFT_EXTEND "
        "if ... else ForwardMode.IDLE` (0.4.10.post2 to 0.5.12); 0.5.13 keeps the member but "
        "has no v1 worker"
    ),
}
WORKER_EVIDENCE = ("TARGET_VERIFY", "DRAFT_EXTEND_V2")

# Modes only the workers of some algorithms put a batch in: mode -> (the algorithms whose
# servers never run it, a word of the path of every file that may put a batch in it, why).
# Checked against the tree: where a file whose path lacks the word puts a batch in the mode
# (`idxcheck.facts.batch_modes`), nothing is assumed. In 0.4.10.post2 to 0.5.23 only the EAGLE
# workers (`speculative/eagle_worker*.py`) put a batch in a draft-extend mode: a server without
# a speculative algorithm, or with the n-gram, DFlash or DSpark one, whose workers are their
# own, never runs it.
ALGORITHM_MODES: dict[str, tuple[tuple[str, ...], str, str]] = {
    mode: (
        ("NONE", "NGRAM", "DFLASH", "DSPARK"),
        "eagle_worker",
        "only the EAGLE workers put a batch in it",
    )
    for mode in ("DRAFT_EXTEND", "DRAFT_EXTEND_V2")
}

# `resolve_num_tokens_per_req(phase=...)` and friends: the width of a phase as the runtime
# computes it. Calls to these give the backend the runtime's own width for that phase.
PHASE_WIDTHS: dict[str, str] = {
    "draft_decode": "speculative_eagle_topk",
    "draft_extend": "speculative_num_draft_tokens",
    "target_verify": "speculative_num_draft_tokens",
}
PHASE_MODES: dict[str, str] = {
    "draft_decode": "DECODE",
    "draft_extend": "DRAFT_EXTEND_V2",
    "target_verify": "TARGET_VERIFY",
}
WIDTH_FUNCTIONS: dict[str, str | None] = {
    # name -> phase (None: read from a `phase=` keyword; "arg:num_draft_tokens": returns that
    # argument, as the EAGLE-family hooks do)
    "resolve_num_tokens_per_req": None,
    "decode_num_tokens_per_req": "target_verify",
    # Its name in 0.5.15, before the `_per_bs` -> `_per_req` renaming of 0.5.16.
    "decode_num_tokens_per_bs": "target_verify",
    "get_num_tokens_per_bs_for_target_verify": "arg:num_draft_tokens",
    "get_num_tokens_per_req_for_target_verify": "arg:num_draft_tokens",
}
# Width functions whose definition, when the scanned tree has it, is interpreted instead of
# the profile's phase width: the backend and the runners then share its conditions.
TREE_WIDTH_FUNCTIONS = (
    "resolve_num_tokens_per_req",
    "decode_num_tokens_per_req",
    "decode_num_tokens_per_bs",
)

# Graph runners: the attributes that hold the query tokens per request they capture, and the
# forward mode they capture in (read from `__init__`).
RUNNER_WIDTH_ATTRS = ("captured_req_width", "num_tokens_per_bs")
RUNNER_MODE_ATTRS = ("capture_forward_mode", "forward_mode")
# Runner classes that run in a draft worker: in DECODE they serve batches that carry a
# speculative input (`spec_info is not None`), the target's decode runner those that do not.
# Draft decode is not compared: its runner lays out topk tokens per request, but backends see
# each draft branch as a sequence of its own (one query row over bs * topk sequences), and
# which view a site takes is not written in the code.
DRAFT_RUNNER = r"Draft|Mtp|MTP"
COMPARE_DRAFT_DECODE = False

# Who runs the backend. One server runs one speculative algorithm, and a backend and the graph
# runners that replay it belong to one worker (the target's model runner or a draft worker's):
# a width that depends on either is the same condition in both. The enum is read from the
# tree as `ForwardMode` is (0.5.23 `speculative/spec_info.py`: DFLASH, UNO, DSPARK, EAGLE,
# ...; its `get_num_tokens_per_req_for_target_verify` gives `num_draft_tokens - 1` to a DSpark
# draft worker); `from_string(None)` is NONE. Plugin algorithms (`CustomSpecAlgo`, registered
# at run time) are not in the tree and not modelled.
ALGORITHM_ENUM = "SpeculativeAlgorithm"
ALGORITHM_NONE = "NONE"
ALGORITHM_ATTRS = ("spec_algorithm",)  # model_runner.spec_algorithm, forward_batch.spec_algorithm
ALGORITHM_CONFIG_ATTRS = ("speculative_algorithm",)  # get_spec().speculative_algorithm
ALGORITHM_PARSERS = ("from_string",)
# `model_runner.is_draft_worker`: the model runner that builds the backend and its graph runners.
WORKER_FLAGS = ("is_draft_worker",)
# What the server arguments force for an algorithm (0.5.23 `arg_groups/speculative_hook.py`,
# `_handle_dflash` and `_handle_dspark`: "DSpark only supports speculative_eagle_topk == 1;
# overriding ..."). Their window is the block size `speculative_num_draft_tokens`, which the
# EAGLE rule of the domain above then ties to num_steps + 1 = 2: an under-approximation (a
# DSpark counterexample shows a window of 2), never a configuration they cannot run.
ALGORITHM_DOMAIN: dict[str, tuple[tuple[str, str], ...]] = {
    member: (
        ("speculative_eagle_topk == 1", f"{member} forces speculative_eagle_topk to 1"),
        ("speculative_num_steps == 1", f"{member} forces speculative_num_steps to 1"),
    )
    for member in ("DFLASH", "DSPARK")
}
# The factory that builds the draft worker's attention backend for some algorithms: (the names
# of the module-level list of backend names it accepts, read from the tree; those algorithms;
# names it builds besides). 0.5.23 `build_draft_tp_worker` (`speculative/draft_worker_common.py`, the
# DSPARK and DFLASH workers) takes a name of `DRAFT_ATTENTION_BACKEND_CHOICES`
# (`arg_groups/choices.py`, a list since 0.5.19) and falls back to flashinfer or triton for any
# other; 0.5.16 to 0.5.18 name the same choices `_SUPPORTED_DRAFT_BACKENDS`, a tuple in
# `draft_worker_common.py`; DSpark's DeepSeek-V4 drafts take `dsv4`. A backend registered under
# none of them is never built by such a draft worker.
# Where the tree says on which devices an algorithm runs: member -> the words its argument
# hook's error message starts with, followed by the devices ("DSpark speculative decoding only
# supports CUDA or NPU device.": 0.5.19 to 0.5.22; CUDA alone in 0.5.16, CUDA, NPU or XPU in
# 0.5.23). Read from the tree; where the message is not found, nothing is assumed.
ALGORITHM_DEVICES: dict[str, str] = {"DSPARK": "DSpark speculative decoding only supports"}
# Attention backends built for one device only: registry name -> that device (the names of
# `ALGORITHM_DEVICES`' messages, lower case). A backend registered only under such names never
# runs with an algorithm its device does not support.
BACKEND_DEVICES: dict[str, str] = {"intel_xpu": "xpu", "ascend": "npu"}
DRAFT_BACKEND_FACTORY = (
    ("DRAFT_ATTENTION_BACKEND_CHOICES", "_SUPPORTED_DRAFT_BACKENDS"),
    ("DSPARK", "DFLASH"),
    ("dsv4",),
)

# Runtime attributes a runner adds to its width, as domain symbols.
RUNNER_SYMBOLS: dict[str, str] = {
    "eagle_worker.draft_extend_num_front_tokens": "num_front_tokens",
}
# The batch a runner builds and hands the backend (`get_forward_batch`). Where each such batch
# of a runner sets one of `WIDTH_LENGTHS` to a value that is never None (the draft-extend
# runners' `extend_seq_lens_cpu=`, a slice of a list of the captured width), those lengths are
# taken as present in every run compared with that runner's width, eager ones included: the
# width itself is read from the runner on the same footing (0.5.16 to 0.5.19, FlashAttention's
# draft extend v2 falls back to a narrower width only where `extend_seq_lens_cpu is None`, which
# neither the runners nor the worker's `prepare_for_draft_extend` leave it).
RUNNER_BATCH_CLASSES = ("ForwardBatch",)
# Constructor parameters a runner's width depends on, with the configuration symbol they stay
# below (each value from 0 up is a runner of its own): parameter -> (bound, why).
RUNNER_PARAM_BOUNDS: dict[str, tuple[str, str]] = {
    "step": (
        "speculative_num_steps",
        "multi-layer EAGLE builds one draft-extend runner per draft step "
        "(`for step in range(self.speculative_num_steps)`, 0.5.12 and 0.5.13)",
    ),
}

# Attributes of runtime objects that are the per-forward width of the current layout.
RUNTIME_WIDTH_ATTRS = ("num_tokens_per_req", "draft_token_num")
# The object that publishes them: the speculative input a backend is handed (a parameter of the
# capture and replay hooks, `forward_batch.spec_info` in an eager forward).
WIDTH_HOLDER = "spec_info"
# Per-request lengths that are the runner's width in a mode that does not pack: the extend
# lengths a v2 draft extend or a target verify runs with (every request carries the whole
# window; `dsa_backend.py` 0.5.23: "All requests extend by the same fixed
# (speculative_num_draft_tokens)"), unlike accepted counts (`accept_length`), which vary.
WIDTH_LENGTHS = ("extend_seq_lens", "extend_seq_lens_tensor", "extend_seq_lens_cpu")

# What an entry point's parameters are. Kinds: "forward_batch", "mode", "bs", "max_bs",
# "num_tokens" (bs * runtime width), "runtime" (a runtime object), "tensor_bs" (a runtime
# tensor with one entry per request), "tensor" (a runtime tensor).
ENTRY_PARAMS: dict[str, str] = {
    "forward_batch": "forward_batch",
    "fb": "forward_batch",
    "batch": "forward_batch",
    "forward_mode": "mode",
    "mode": "mode",
    "bs": "bs",
    "batch_size": "bs",
    "num_seqs": "bs",
    "max_bs": "max_bs",
    "max_num_tokens": "max_num_tokens",
    "num_tokens": "num_tokens",
    "spec_info": "runtime",
    # The padded batch a breakable CUDA graph replays (DeepSeek-V4, 0.5.23): a batch the
    # runner builds, of a size of its own (not `bs`), so only an object of the runtime.
    "static_forward_batch": "runtime",
    "encoder_lens": "tensor_bs",
    "seq_lens": "tensor_bs",
    "seq_lens_cpu": "tensor_bs",
    "req_pool_indices": "tensor_bs",
    "seq_lens_sum": "runtime",
    "in_capture": "runtime",
    "out_cache_loc": "tensor",
    "positions": "tensor",
    "kv_indices_buf": "runtime",
    "kv_indptr_buf": "runtime",
}

# Attributes of the forward batch, by kind (as for ENTRY_PARAMS).
FORWARD_BATCH_ATTRS: dict[str, str] = {
    "forward_mode": "mode",
    # The mode a relabelled batch really carries: DECODE for a decode batch that
    # `prepare_mlp_sync_batch` labelled EXTEND, else `forward_mode`. Taken as the mode itself:
    # the two differ only for EXTEND, which has no fixed width to compare with.
    "logical_forward_mode": "mode",
    "batch_size": "bs",
    "spec_info": "runtime",
    "seq_lens": "tensor_bs",
    "seq_lens_cpu": "tensor_bs",
    "req_pool_indices": "tensor_bs",
    "extend_seq_lens": "tensor_bs",
    "extend_prefix_lens": "tensor_bs",
    "extend_seq_lens_cpu": "tensor_bs",
    "extend_prefix_lens_cpu": "tensor_bs",
    "encoder_lens": "tensor_bs",
    "input_ids": "tensor_tokens",
    "positions": "tensor_tokens",
    "out_cache_loc": "tensor_tokens",
}

# Index-pointer and grid-scalar names. A name is split at underscores; it has the role when
# its words contain one of these word sequences and every other word is in the allowed
# prefixes and suffixes (so `cu_seqlens_q_local`, a chunked layout, is not taken for the
# per-request one).
QO_INDPTR_WORDS: tuple[tuple[str, ...], ...] = (
    ("qo", "indptr"),
    ("q", "indptr"),
    ("cu", "seqlens", "q"),
    ("query", "start", "loc"),
)
GRID_WORDS: tuple[tuple[str, ...], ...] = (
    ("max", "extend", "len"),
    ("max", "len", "extend"),
    ("max", "seq", "len", "q"),
    ("max", "seqlen", "q"),
    ("max", "q", "len"),
    ("max", "qo", "len"),
    ("max", "seqlen", "qo"),
    ("max", "qlen"),
    ("max", "query", "len"),
)
ROLE_PREFIXES = frozenset({"cuda", "graph", "cg", "decode", "dense", "self", "plan", "static"})
ROLE_SUFFIXES = frozenset({"buf", "buffer", "cpu", "host", "device", "gpu", "np", "decode"})

# Which entry points build metadata at CUDA-graph capture, which refill it before replay, and
# which build it for eager runs; `init_forward_metadata_out_graph(in_capture=...)` does both,
# told apart by its `in_capture` flag.
CAPTURE_ENTRIES = ("init_forward_metadata_capture_cuda_graph",)
REPLAY_ENTRIES = ("init_forward_metadata_replay_cuda_graph",)
EAGER_ENTRIES = ("init_forward_metadata",)
CAPTURE_FLAG = "rt:in_capture"

# Backend entry points that the runtime calls. Other public methods are entries too; these are
# entries even when another method of the class also calls them.
ENTRY_POINTS = frozenset(
    {
        "init_forward_metadata",
        "init_forward_metadata_capture_cuda_graph",
        "init_forward_metadata_replay_cuda_graph",
        "init_forward_metadata_out_graph",
        "init_forward_metadata_in_graph",
        "init_cuda_graph_state",
    }
)

# The default ForwardMode model: members in order, and each predicate as (members always
# included, {flag parameter: members included when the flag is true}). Written from the
# 0.5.13 semantics, which has both draft-extend generations.
MODE_MEMBERS: tuple[str, ...] = (
    "EXTEND",
    "DECODE",
    "MIXED",
    "IDLE",
    "TARGET_VERIFY",
    "DRAFT_EXTEND",
    "DRAFT_EXTEND_V2",
    "PREBUILT",
    "SPLIT_PREFILL",
    "DLLM_EXTEND",
)
# Members of one SGLang generation only: when the default model is used (the scanned files hold
# no ForwardMode), such a member is part of it only if the scanned files mention it, so that a
# 0.5.23 backend is not checked in a mode its release does not have. Every text the pattern
# matches holds the member's name in upper or lower case (files without it are not searched).
MODE_MEMBERS_IF_MENTIONED: dict[str, str] = {
    "DRAFT_EXTEND": r"ForwardMode\.DRAFT_EXTEND\b(?!_)|\.is_draft_extend\(",
}
MODE_PREDICATES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "is_extend": (
        ("EXTEND", "MIXED", "DRAFT_EXTEND", "TARGET_VERIFY", "SPLIT_PREFILL", "DLLM_EXTEND"),
        {"include_draft_extend_v2": ("DRAFT_EXTEND_V2",)},
    ),
    "is_prefill": (
        ("EXTEND", "MIXED", "DRAFT_EXTEND", "TARGET_VERIFY", "SPLIT_PREFILL", "DLLM_EXTEND"),
        {"include_draft_extend_v2": ("DRAFT_EXTEND_V2",)},
    ),
    "is_context_parallel_extend": (
        ("EXTEND", "MIXED"),
        {"include_draft_extend_v2": ("DRAFT_EXTEND_V2",)},
    ),
    "is_decode": (("DECODE",), {}),
    "is_mixed": (("MIXED",), {}),
    "is_idle": (("IDLE",), {}),
    "is_decode_or_idle": (("DECODE", "IDLE"), {}),
    "is_target_verify": (("TARGET_VERIFY",), {}),
    "is_draft_extend": (("DRAFT_EXTEND",), {"include_v2": ("DRAFT_EXTEND_V2",)}),
    "is_draft_extend_v2": (("DRAFT_EXTEND_V2",), {}),
    "is_extend_or_draft_extend_or_mixed": (
        ("EXTEND", "DRAFT_EXTEND", "MIXED", "SPLIT_PREFILL"),
        {"include_draft_extend_v2": ("DRAFT_EXTEND_V2",)},
    ),
    "is_cuda_graph": (("DECODE", "TARGET_VERIFY", "IDLE", "DLLM_EXTEND"), {}),
    "is_cpu_graph": (("DECODE",), {}),
    "is_split_prefill": (("SPLIT_PREFILL",), {}),
    "is_extend_without_speculative": (("EXTEND", "MIXED", "SPLIT_PREFILL", "DLLM_EXTEND"), {}),
    "is_prebuilt": (("PREBUILT",), {}),
    "is_dllm_extend": (("DLLM_EXTEND",), {}),
}

# Kernel-aware severity for grid scalars: the Triton launcher a scalar reaches, the launcher
# parameter that sizes its grid (`grid = (bs, heads, triton.cdiv(max_len_extend, BLOCK_M))`),
# and the launcher's block-size table, as (arch, smallest head dim, largest head dim, BLOCK_M),
# read from SGLang 0.5.13 `_get_block_sizes_for_extend_attention` (CUDA paths; ROCm uses 64).
KERNEL_GRIDS: dict[str, tuple[str, str]] = {
    "max_extend_len": ("extend_attention_fwd", "max_len_extend"),
}
KERNEL_BLOCK_M: dict[str, tuple[tuple[str, int, int, int], ...]] = {
    "extend_attention_fwd": (
        ("sm90", 1, 128, 128),
        ("sm90", 129, 256, 64),
        ("sm90", 257, 1024, 32),
        ("sm100", 1, 256, 64),
        ("sm100", 257, 1024, 16),
        ("sm120", 1, 256, 64),
        ("sm120", 257, 1024, 32),
        ("sm80", 1, 128, 128),
        ("sm80", 129, 256, 64),
        ("sm80", 257, 1024, 32),
        ("sm86", 1, 256, 64),
        ("sm86", 257, 1024, 32),
        ("rocm", 1, 1024, 64),
    ),
}
# Head dimensions of the models the kernels serve (MLA's 576 included).
HEAD_DIMS = (64, 80, 96, 128, 192, 256, 288, 576)

# Library entries whose parameters are index pointers or grid scalars, by the called name:
# (words of a receiver that make the call another one, ((parameter, position), ...)); a value
# handed to such a parameter, by keyword or at its position, has its role whatever its own
# name. flash-attn's and sgl-kernel's `flash_attn_varlen_func(q, k, v, cu_seqlens_q,
# cu_seqlens_k, max_seqlen_q, ...)`; `flash_attn_with_kvcache` takes them by keyword only
# (their positions differ between flash-attn 2 and FA3); FlashInfer's prefill, ragged and MLA
# wrappers `plan(qo_indptr, ...)`, but not its decode wrappers, whose first parameter is the
# KV index pointer.
ROLE_CALLS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, int | None], ...]]] = {
    "flash_attn_varlen_func": ((), (("cu_seqlens_q", 3), ("max_seqlen_q", 5))),
    "flash_attn_with_kvcache": ((), (("cu_seqlens_q", None), ("max_seqlen_q", None))),
    "plan": (("decode",), (("qo_indptr", 0),)),
}

# Prefilter: a file can hold something idxcheck reads only if it contains one of these. A site
# is a value bound to a name with a role, so the role names themselves are the filter (an
# `arange` that reaches no such name is no site); runners, width functions and the mode enum
# are read for the tree's facts.
PREFILTER = (
    "qo_indptr",
    "q_indptr",
    "cu_seqlens_q",
    "query_start_loc",
    "max_extend_len",
    "max_len_extend",
    "max_seq_len_q",
    "max_seqlen_q",
    "max_q_len",
    "max_qo_len",
    "max_seqlen_qo",
    "max_qlen",
    "max_query_len",
    "num_tokens_per_bs",
    "captured_req_width",
    "def init_cuda_graph_state",
    "def resolve_num_tokens_per_req",
    "def decode_num_tokens_per_req",
    "def decode_num_tokens_per_bs",
    "class ForwardMode",
    "class SpeculativeAlgorithm",
    "DRAFT_ATTENTION_BACKEND_CHOICES = [",
    "_SUPPORTED_DRAFT_BACKENDS = (",
    "DSpark speculative decoding only supports",
)

# How the tree states its own facts, read from its text (`idxcheck.facts`).
# The mode enum, and the attribute that holds a batch's (and a runner's) forward mode.
MODE_ENUM = "ForwardMode"
# A file holding every word of one entry may state configuration constraints (an argument hook
# that rejects a combination for one attention backend): it is read for tree facts even when it
# holds no site.
TREE_FACT_WORDS: tuple[tuple[str, ...], ...] = (
    ("raise", "speculative_eagle_topk", "attention_backend"),
    ("register_attention_backend(",),
)
# A file holding all of these may put a batch in a mode: it is read only when its text does put
# one in a mode that `WORKER_MODES` or `WORKER_EVIDENCE` name.
BATCH_MODE_WORDS = ("forward_mode", "ForwardMode.")
# `<object>.forward_mode = <value>`, but for `self.forward_mode` (a runner's own capture mode;
# `self.batch.forward_mode` is a batch); `forward_mode=ForwardMode.X` as a keyword argument;
# a member named in the value assigned.
BATCH_MODE_ASSIGNED = r"(?<![\w.])(?!self\.forward_mode\b)[A-Za-z_][\w.]*\.forward_mode[ \t]*=(?!=)"
BATCH_MODE_KEYWORD = r"[(,]\s*forward_mode\s*=\s*ForwardMode\.([A-Z][A-Z0-9_]*)"
BATCH_MODE_MEMBER = r"ForwardMode\.([A-Z][A-Z0-9_]*)"
# The forward mode a runner captures in, where no `RUNNER_MODE_ATTRS` attribute says it: the
# `forward_mode=ForwardMode.X` of the batch it builds.
RUNNER_MODE_KEYWORD = r"forward_mode\s*=\s*ForwardMode\.([A-Z_0-9]+)\b"
# The decode runners of draft and target workers serve different batches, told apart by this
# opaque condition of the runtime (key, text): the draft's carry a speculative input.
DRAFT_DECODE_MODE = "DECODE"
DRAFT_DECODE_SELECTOR = ("none:spec_info", "spec_info is None")
# Argument checks (`idxcheck.facts.constraints`): the decorator that registers an attention
# backend by name, the configuration attribute that selects one, the words a file holding a
# check has, the names configuration objects go by inside a check, and the assignment that
# forces `speculative_num_draft_tokens = speculative_num_steps + 1` (its pattern and how a
# finding cites it).
REGISTRY_DECORATOR = "register_attention_backend"
BACKEND_SELECTOR = "attention_backend"
CHECK_WORDS = ("raise", "speculative")
CHECK_CONFIG_NAMES = ("server_args", "cfg", "args", "self")
FORCED_ASSIGNMENT = (
    r"speculative_num_draft_tokens\s*=\s*[A-Za-z_.]*speculative_num_steps\s*\+\s*1",
    "speculative_num_draft_tokens forced to speculative_num_steps + 1 when topk == 1",
)

# How a server operator sets each symbol of a counterexample, read from the server arguments
# (`--` + the field name with dashes, 0.5.23 `arg_groups/fields/`; 0.5.13 `server_args.py`)
# and the code that derives the rest. A setting is a server flag (`--flag {}`: `{}` is the
# value), an environment variable (`NAME=value`), `model: ...` (what the served model must be)
# or `runtime: ...` (what happens at run time, not set at launch). A symbol without an entry
# has no known setting, and a finding says so.
LAUNCH_COMMAND = "python -m sglang.launch_server --model-path MODEL"
LAUNCH_BACKEND = "--attention-backend {}"
LAUNCH_SETTINGS: dict[str, tuple[str, ...]] = {
    "speculative_eagle_topk": ("--speculative-eagle-topk {}",),
    "speculative_num_steps": ("--speculative-num-steps {}",),
    "speculative_num_draft_tokens": ("--speculative-num-draft-tokens {}",),
    "page_size": ("--page-size {}",),
    # The multi-layer EAGLE v2 worker's boundary-KV fix widens each request's draft extend by
    # num_steps - 1 + the conv warm-up of a hybrid model's linear-attention layers
    # (0.5.23 `multi_layer_eagle_worker_v2._init_boundary_kv_fix_state`).
    "num_front_tokens": (
        "--enable-multi-layer-eagle",
        "SGLANG_ENABLE_MTP_BOUNDARY_KV_FIX=1",
        "model: a hybrid linear-attention model with an MTP draft (its boundary-KV fix adds "
        "{} front rows: num_steps - 1 + the conv warm-up)",
    ),
    "dllm_block_size": ("model: a diffusion LLM whose block size is {}",),
    "head_dim": ("model: head dimension {}",),
    "bs": ("runtime: batch size {}",),
    "max_bs": ("runtime: CUDA graphs captured up to batch size {}",),
    "block_m": ("runtime: the extend kernel's BLOCK_M is {} (from the GPU and head dimension)",),
    "arch": ("runtime: a {} GPU",),
}
# Symbols that need their settings only when above zero (the feature is off at 0).
LAUNCH_ONLY_POSITIVE = ("num_front_tokens",)
LAUNCH_ALGORITHM = "--speculative-algorithm {}"
LAUNCH_DRAFT_WORKER = (
    "runtime: the draft worker's model runner builds the backend (the draft model's attention "
    "backend and its graph runners)",
)
# What a batch in each mode takes: the speculative algorithm, spec v2 or v1 (0.5.9 defaults
# to v1, 0.5.11 and later to v2), a dLLM algorithm.
LAUNCH_MODES: dict[str, tuple[str, ...]] = {
    "TARGET_VERIFY": ("--speculative-algorithm EAGLE",),
    "DRAFT_EXTEND_V2": ("--speculative-algorithm EAGLE", "SGLANG_ENABLE_SPEC_V2=1"),
    "DRAFT_EXTEND": ("--speculative-algorithm EAGLE", "SGLANG_ENABLE_SPEC_V2=0"),
    "DLLM_EXTEND": ("--dllm-algorithm LowConfidence", "model: a diffusion LLM"),
}
