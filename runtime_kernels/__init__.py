"""Runtime companion: our own Triton kernels and the CUDA-graph replay engine that confirm a
static counterexample on real hardware (or on the CPU through the Triton interpreter).

Importing this package imports neither torch nor triton; its submodules do, on demand.

Modules, in the order a confirmation uses them:

* ``confirm``: ``confirm_findings(doc, ...)`` -> the findings document with a ``confirmation`` on
  each replayable finding (torch-free at import, so a missing runtime becomes ``skipped``);
* ``layout``: the indexing contract in plain Python (block-size table, row predictions);
* ``replay``: ``ReplayCase``/``ReplayResult``, ``ReplaySession`` (capture, refill, replay,
  judge), ``replay``/``replay_many``;
* ``extend_attention``: our extend-attention Triton kernel (SGLang's indexing contract);
* ``probe``: the coverage probe (which (request, position) each row was computed as);
* ``adapters``: how a replay calls a kernel: ours, SGLang's ``extend_attention_fwd``, vLLM's
  ``unified_attention``, or a user's ``module:function`` (or ``file.py:function``);
* ``vllm_standin``: importing a kernel file of a vLLM source tree without installing vLLM;
* ``emit_test``: standalone regression tests for confirmed findings (``--emit-test DIR``);
* ``_jit`` and ``worker``: keeping triton in the right mode (compiled vs interpreted), in this
  process or a subprocess.
"""
