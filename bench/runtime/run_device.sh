#!/usr/bin/env bash
# One batched GPU session: GPU tests, the confirm benchmark (ours and SGLang's kernel), the
# DOMAIN.md table with both kernels, and the CPU suite under that host's Triton interpreter.
# Logs go to $OUT (default ./device-out). Run from the repository root:
#
#   OUT=/tmp/out bash bench/runtime/run_device.sh [SGLANG_DIR]
#
# SGLANG_DIR (default .carry/sglang_0_5_13) holds SGLang's triton_ops/extend_attention.py from a
# downloaded release plus a stub sglang/srt/utils (never committed; see RESULTS.md).
set -u
OUT=${OUT:-device-out}
mkdir -p "$OUT"
SGL=${1:-.carry/sglang_0_5_13}
export PYTHONUNBUFFERED=1

# shellcheck source=bench/runtime/device_env.sh
. bench/runtime/device_env.sh

export IDXCHECK_SGLANG_PATH="$PWD/$SGL"

echo "== GPU tests" | tee "$OUT/gpu_tests.log"
timeout 240 python3 -m pytest -m gpu tests/runtime -q -rs -p no:cacheprovider --durations=10 \
  2>&1 | tee -a "$OUT/gpu_tests.log"

echo "== bench: ours, cold Triton cache" | tee "$OUT/bench.log"
timeout 120 python3 bench/runtime/bench_confirm.py --device cuda --repeats 50 \
  --json "$OUT/bench_gpu_ours.json" 2>&1 | tee -a "$OUT/bench.log"
echo "== bench: SGLang 0.5.13 extend_attention_fwd, cold Triton cache" | tee -a "$OUT/bench.log"
PYTHONPATH="$PWD/$SGL${PYTHONPATH:+:$PYTHONPATH}" timeout 120 python3 bench/runtime/bench_confirm.py --device cuda \
  --repeats 50 --kernel "sglang.srt.layers.attention.triton_ops.extend_attention:extend_attention_fwd" \
  --json "$OUT/bench_gpu_sglang.json" 2>&1 | tee -a "$OUT/bench.log"

echo "== DOMAIN table, ours vs SGLang" | tee "$OUT/domain_table.log"
timeout 180 python3 bench/runtime/domain_table.py --device cuda --sglang "$PWD/$SGL" \
  --json "$OUT/domain_table_gpu.json" 2>&1 | tee -a "$OUT/domain_table.log"

echo "== CPU suite on this host's Triton interpreter" | tee "$OUT/cpu_tests.log"
timeout 240 python3 -m pytest -m "not gpu" tests/runtime -q -rs -p no:cacheprovider \
  2>&1 | tail -15 | tee -a "$OUT/cpu_tests.log"
