"""The vLLM project profile (the v1 engine): what the scanned tree does not say, as data.

vLLM has no forward-mode enum. A metadata builder (`AttentionMetadataBuilder`) is handed a
`CommonAttentionMetadata` (`query_start_loc`, `seq_lens`, `num_reqs`, `num_actual_tokens`,
`max_query_len`) and splits it into decodes and prefills itself; its entry point says the phase
a layout is built in. The phase model:

- UNIFORM_DECODE: the decodes of a batch (`_build_decode`), every request with the same number
  of query tokens, `1 + num_speculative_tokens` under speculative decoding (a verify step) where
  the builder treats speculative requests as decodes (`reorder_batch_threshold`);
- MIXED: a batch of decodes and prefills (`build`), one request's tokens after the last's;
- CAPTURE: the dummy batch of a CUDA-graph capture (`build_for_cudagraph_capture`), uniform
  decode requests of the same width;
- DRAFT: a drafter's step after its first (`build_for_drafting`, `update_draft_decode_metadata`),
  one query token per request.

The width of UNIFORM_DECODE and CAPTURE is read from the model runner of the scanned tree
(`GPUModelRunner.uniform_decode_query_len`), the widest decode a builder takes from its
`reorder_batch_threshold` (`max_decode_query_len`); the profile's default applies only where
the tree has no such runner, and a finding then says so (0.34.0 has none: its V1 model runner
and dispatcher are gone, and the width is a property of `VllmConfig`).

Facts were read off vLLM releases 0.26.0, 0.27.0, 0.33.0 and 0.34.0 from PyPI (`vllm/` paths)."""

from __future__ import annotations

NAME = "vllm"
# Files inside a `vllm` package are vLLM's when the profile is `auto`.
PACKAGES = ("vllm",)

# Configuration attribute (as read from a configuration object) -> symbol. `max_num_seqs` is
# the largest batch (`bs` stays below it), the number of requests is `bs`.
CONFIG_SYMBOLS: dict[str, str] = {
    "num_speculative_tokens": "num_speculative_tokens",
    "max_num_seqs": "max_bs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_model_len": "max_model_len",
    "max_cudagraph_capture_size": "max_cudagraph_capture_size",
    "max_num_new_slots_for_drafting": "max_num_new_slots_for_drafting",
}

# Constructor parameters that carry a configuration value directly.
INIT_PARAM_SYMBOLS: dict[str, str] = {
    "num_speculative_tokens": "num_speculative_tokens",
    "max_num_seqs": "max_bs",
    "max_num_reqs": "max_bs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_model_len": "max_model_len",
}

# Configuration objects: `vllm_config`, and its parts (`vllm_config.speculative_config`,
# `.scheduler_config`, ...) and the runtime's copies of them (`self.speculative_config`).
CONFIG_OBJECT_ATTRS = (
    "vllm_config",
    "speculative_config",
    "scheduler_config",
    "model_config",
    "compilation_config",
    "cache_config",
    "parallel_config",
)
CONFIG_OBJECT_NAMES = ("vllm_config", "speculative_config", "scheduler_config")
CONFIG_FUNCTIONS = ("get_current_vllm_config",)

# Symbols of the domain, in the order a counterexample is minimised and printed, with their
# names in vLLM's own terms (the flags of `vllm serve`, the fields of `SpeculativeConfig`).
DISPLAY: dict[str, str] = {
    "bs": "num_reqs",
    "num_speculative_tokens": "num_speculative_tokens",
    "max_bs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_model_len": "max_model_len",
    "max_cudagraph_capture_size": "max_cudagraph_capture_size",
    "max_num_new_slots_for_drafting": "max_num_new_slots_for_drafting",
}

CONTEXT_SYMBOLS = (
    "max_bs",
    "max_num_batched_tokens",
    "max_model_len",
    "max_cudagraph_capture_size",
)

# The configuration domain. `num_speculative_tokens == 0` stands for no speculative config
# (`SpeculativeConfig.num_speculative_tokens` is `gt=0` when there is one).
DOMAIN: tuple[tuple[str, str], ...] = (
    ("bs >= 1", "a batch holds at least one request"),
    ("bs <= max_bs", "a batch holds at most max_num_seqs requests (SchedulerConfig)"),
    ("max_bs <= 4096", "explored range"),
    (
        "num_speculative_tokens >= 0",
        "0: no speculative decoding; SpeculativeConfig.num_speculative_tokens > 0 otherwise",
    ),
    ("num_speculative_tokens <= 32", "explored range"),
    (
        "max_num_new_slots_for_drafting >= 0",
        "SpeculativeConfig.max_num_new_slots_for_drafting: the query slots a drafter adds to "
        "a verified request (0.34.0: 0, or 1 for the standalone draft model)",
    ),
    ("max_num_new_slots_for_drafting <= 1", "explored range"),
    (
        "max_num_batched_tokens >= max_bs",
        "SchedulerConfig: max_num_batched_tokens must be at least max_num_seqs",
    ),
    ("max_num_batched_tokens <= 1048576", "explored range"),
    ("max_model_len >= 1", "a model takes at least one token"),
    (
        "max_cudagraph_capture_size >= 0",
        "the largest CUDA-graph capture size; 0 without CUDA graphs (enforce_eager, "
        "cudagraph_mode NONE: VllmConfig._set_cudagraph_sizes)",
    ),
    (
        "max_cudagraph_capture_size <= max_num_batched_tokens",
        "VllmConfig._set_cudagraph_sizes: capture sizes above max_num_batched_tokens are "
        "dropped and the largest one left is max_cudagraph_capture_size",
    ),
)

# Runtime width per phase where the scanned tree has no model runner that states it.
DEFAULT_WIDTHS: dict[str, tuple[str, str]] = {
    "UNIFORM_DECODE": (
        "1 + num_speculative_tokens",
        "vLLM profile: a uniform decode (a verify step under speculative decoding) lays out "
        "1 + num_speculative_tokens per request (`uniform_decode_query_len`)",
    ),
    "CAPTURE": (
        "1 + num_speculative_tokens",
        "vLLM profile: a CUDA-graph capture's dummy batch lays out uniform decodes of "
        "1 + num_speculative_tokens per request (`_dummy_run(uniform_decode=True)`)",
    ),
    "DRAFT": (
        "1",
        "vLLM profile: a drafter's steps after its first lay out one token per request "
        "(`build_for_drafting`)",
    ),
}

# The widest decode a spec-as-decode builder takes (`max_decode_query_len(vllm_config)`, which
# `_init_reorder_batch_threshold` sets `reorder_batch_threshold` to).
PHASE_WIDTHS: dict[str, str] = {"uniform_decode": "1 + num_speculative_tokens"}
PHASE_MODES: dict[str, str] = {"uniform_decode": "UNIFORM_DECODE"}
WIDTH_FUNCTIONS: dict[str, str | None] = {"max_decode_query_len": "uniform_decode"}
TREE_WIDTH_FUNCTIONS = ("max_decode_query_len",)

# Runtime attributes that are the per-forward width of the current layout: none, vLLM passes
# lengths (`query_start_loc`), not a width.
RUNTIME_WIDTH_ATTRS: tuple[str, ...] = ()

# The phase each builder entry point runs in, and the attribute of the builder that bounds
# the query tokens of a request there (the decode/prefill split hands `_build_decode` only the
# requests of at most `reorder_batch_threshold` tokens).
ENTRY_MODES: dict[str, tuple[str, ...]] = {
    "_build_decode": ("UNIFORM_DECODE",),
    "build_for_cudagraph_capture": ("CAPTURE",),
    "build_for_drafting": ("DRAFT",),
    "update_draft_decode_metadata": ("DRAFT",),
}
ENTRY_WIDTH_BOUNDS: dict[str, str] = {
    "_build_decode": "reorder_batch_threshold",
    "build_for_cudagraph_capture": "_cudagraph_support",
}
# A builder's `AttentionCGSupport` bounds what it is captured with: a builder that supports no
# CUDA graph is never captured, one of single-token decodes only with one token per request
# (`AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE`); UNIFORM_BATCH and ALWAYS bound nothing.
MEMBER_WIDTHS: dict[str, tuple[str, dict[str, int]]] = {
    "_cudagraph_support": (
        "get_cudagraph_support",
        {"NEVER": 0, "UNIFORM_SINGLE_TOKEN_DECODE": 1},
    ),
}

# The decode/prefill split of a batch (`v1/attention/backends/utils.py`): counts the runtime
# computes, the same wherever a builder or its helpers test them.
RUNTIME_COUNTS: dict[str, tuple[str, ...]] = {
    "split_decodes_and_prefills": (
        "num_decodes",
        "num_prefills",
        "num_decode_tokens",
        "num_prefill_tokens",
    ),
}

# The same split of a batch whose requests all carry one width `w` (the runtime's in a phase
# with a width: a verify step, a capture's dummy batch, a draft step) is known: every request is
# a decode where `w <= decode_threshold`, none is otherwise (the function's own fast path, and
# with `require_uniform` its test that all lengths agree). Per function: its threshold parameter,
# that parameter's position and default, the flags that must keep their default for this to
# hold (`treat_short_extends_as_decodes=False` also asks whether each request is prefilling,
# which the batch's lengths do not say), and what each count is when every request is a decode
# and when none is ("requests": the batch's requests, "tokens": its tokens, "none": 0).
UNIFORM_SPLITS: dict[
    str, tuple[str, int, int, tuple[tuple[str, int, bool], ...], tuple[str, ...], tuple[str, ...]]
] = {
    "split_decodes_and_prefills": (
        "decode_threshold",
        1,
        1,
        (("treat_short_extends_as_decodes", 3, True),),
        ("requests", "none", "tokens", "none"),
        ("none", "requests", "none", "tokens"),
    ),
}

# The CUDA-graph dispatcher (`v1/cudagraph_dispatcher.py`) pads a batch's token count up to a
# capture size: `dispatch(num_tokens, ...)` returns `(cudagraph_mode, batch_descriptor)`, and
# `batch_descriptor.num_tokens` is the smallest capture size at least `num_tokens` (from the
# sizes in `cudagraph_capture_sizes`, the largest of which is `max_cudagraph_capture_size`), or
# `num_tokens` itself above the largest, with CUDA graphs off or their keys not initialised.
# Only that envelope is modelled, not the list of sizes: the padded count is at least the
# count and at most `max_cudagraph_capture_size` where the count is.
PADDING_METHODS: dict[str, tuple[str, int, int, int, str, str]] = {
    "CudagraphDispatcher.dispatch": (
        "num_tokens",
        0,
        2,
        1,
        "num_tokens",
        "max_cudagraph_capture_size",
    ),
}

# Under data parallelism (`v1/worker/dp_utils.py`), `coordinate_batch_across_dp(...,
# num_tokens_padded=n', ...)` returns `(should_ubatch, num_tokens_across_dp, synced_mode)`:
# `num_tokens_across_dp` is None with one rank, else every rank's `n'` (`_run_ar`), all raised
# to the largest of them only where the ranks' synced CUDA-graph mode is not NONE (the least
# of theirs: every rank dispatched to a graph, so every `n'` is at most
# `max_cudagraph_capture_size`) or they microbatch (`should_dp_pad`). Without microbatching
# (`allow_microbatching=False`), this rank's entry is its own `n'` or, where `n'` is at most
# `max_cudagraph_capture_size`, one between `n'` and it: the dispatcher's envelope again. With
# microbatching the ranks may be raised to another rank's eager count: not modelled.
PADDING_FUNCTIONS: dict[str, tuple[str, int, int, int, str, str]] = {
    "coordinate_batch_across_dp": (
        "num_tokens_padded",
        3,
        3,
        1,
        "allow_microbatching",
        "max_cudagraph_capture_size",
    ),
}

# What an entry point's parameters are (kinds as in the SGLang profile).
ENTRY_PARAMS: dict[str, str] = {
    "common_attn_metadata": "forward_batch",
    # The batch a model runner hands its speculators and model states (`InputBatch`): the
    # runtime's, its counts as the runtime sizes them.
    "input_batch": "tensor",
    "num_reqs": "bs",
    "num_decodes": "bs",
    "num_seqs": "bs",
    "batch_size": "bs",
    "max_num_reqs": "max_bs",
    # The decodes' tokens (`_build_decode`): bs requests of the runtime width. Other token
    # counts are the runtime's (a drafter's `num_tokens` is padded to a capture size).
    "num_decode_tokens": "num_tokens",
    "num_tokens": "runtime",
    "seq_lens": "tensor_bs",
    "seq_lens_cpu": "tensor_bs",
    "seq_lens_device": "tensor_bs",
    "block_table_tensor": "tensor_bs",
    "query_start_loc": "tensor_qo",
    "query_start_loc_cpu": "tensor_qo",
    "query_start_loc_device": "tensor_qo",
    "dcp_tot_seq_lens_device": "tensor",
    "common_prefix_len": "runtime",
    "fast_build": "runtime",
    "draft_index": "runtime",
    "max_seq_len": "runtime",
}

# Attributes of `CommonAttentionMetadata`, by kind.
# The batch's own counts (`num_reqs`, `num_actual_tokens`, `max_query_len`) are runtime values:
# a builder splits the batch into decodes and prefills, and `bs` is the number of requests of
# the part a phase handles (the decodes handed to `_build_decode`).
FORWARD_BATCH_ATTRS: dict[str, str] = {
    "seq_lens": "tensor",
    "seq_lens_cpu": "tensor",
    "num_computed_tokens_cpu": "tensor",
    "block_table_tensor": "tensor",
    "query_start_loc": "tensor_qo",
    "query_start_loc_cpu": "tensor_qo",
    "max_query_len": "max_width",
    "slot_mapping": "tensor",
}

# Index-pointer and grid-scalar names (split at underscores; see the SGLang profile).
QO_INDPTR_WORDS: tuple[tuple[str, ...], ...] = (
    ("qo", "indptr"),
    ("q", "indptr"),
    ("cu", "seqlens", "q"),
    ("query", "start", "loc"),
)
GRID_WORDS: tuple[tuple[str, ...], ...] = (
    ("max", "query", "len"),
    ("max", "seqlen", "q"),
    ("max", "seq", "len", "q"),
    ("max", "q", "len"),
    ("max", "qo", "len"),
    ("max", "seqlen", "qo"),
    ("max", "qlen"),
)
# Not `decode`: a builder splits the batch, and its `decode_max_query_len` is the decode part's,
# which can be empty and is not laid out by the batch's `query_start_loc`.
ROLE_PREFIXES = frozenset({"cuda", "graph", "cg", "self", "static", "persistent"})
ROLE_SUFFIXES = frozenset({"buf", "buffer", "cpu", "host", "device", "gpu", "np"})

# Builder entry points the runtime calls (entries even when another method calls them).
ENTRY_POINTS = frozenset(
    {
        "build",
        "build_for_cudagraph_capture",
        "build_for_drafting",
        "update_draft_decode_metadata",
        "_build_decode",
    }
)

# The phase model (vLLM has no mode enum: the members are the profile's).
MODE_MEMBERS: tuple[str, ...] = ("UNIFORM_DECODE", "MIXED", "CAPTURE", "DRAFT")
MODE_PREDICATES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {}

# Model runners: the attribute that holds the tokens per request of a uniform decode, and the
# phases it is the width of (`GPUModelRunner.uniform_decode_query_len = 1 + num_spec_tokens`).
RUNNER_WIDTH_ATTRS = ("uniform_decode_query_len",)
RUNNER_MODE_ATTRS: tuple[str, ...] = ()
RUNNER_WIDTH_MODES: dict[str, tuple[str, ...]] = {
    "uniform_decode_query_len": ("UNIFORM_DECODE", "CAPTURE"),
}
# The configuration object's class: 0.33.0 on states the width of a uniform decode as its
# property (`uniform_decode_query_len`, `1 + self.num_speculative_tokens`), the only place
# 0.34.0 states it (its V1 model runner and dispatcher are gone).
CONFIG_CLASSES = ("VllmConfig",)
# The runners of drafters (`v1/spec_decode/`) are not model runners of the target.
DRAFT_RUNNER = r"Proposer|Drafter|Speculator"
# A drafter is built only under a speculative config (`GPUModelRunner.__init__` builds one where
# `self.speculative_config` is set; `DFlashProposer.__init__` asserts it), whose
# `num_speculative_tokens` is above 0.
DRAFTER_DOMAIN: tuple[tuple[str, str], ...] = (
    (
        "num_speculative_tokens >= 1",
        "a drafter runs only under a speculative config (SpeculativeConfig: "
        "num_speculative_tokens > 0)",
    ),
)

# Prefilter: role names, the runner's width attribute and the width function.
PREFILTER = (
    "qo_indptr",
    "q_indptr",
    "cu_seqlens_q",
    "query_start_loc",
    "max_query_len",
    "max_seqlen_q",
    "max_seq_len_q",
    "max_q_len",
    "max_qo_len",
    "max_seqlen_qo",
    "max_qlen",
    "uniform_decode_query_len",
    "def max_decode_query_len",
)
