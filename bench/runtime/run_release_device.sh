#!/usr/bin/env bash
# Confirm the findings of a real release's scan on the GPU host: with idxcheck's extend kernel,
# then with SGLang's own `extend_attention_fwd`, each captured in a CUDA graph and replayed.
# Logs and confirmed reports go to $OUT (default ./device-out). Run from the repository root:
#
#   OUT=/tmp/out bash bench/runtime/run_release_device.sh REPORT [SGLANG_DIR]
#
# REPORT is `idxcheck scan --format json` of the release (made where the static checker runs);
# SGLANG_DIR (default .carry/sglang_0_5_13) as in run_device.sh. Neither is committed.
set -u
OUT=${OUT:-device-out}
mkdir -p "$OUT"
REPORT=$1
SGL=${2:-.carry/sglang_0_5_13}
export PYTHONUNBUFFERED=1

# shellcheck source=bench/runtime/device_env.sh
. bench/runtime/device_env.sh

echo "== $REPORT: idxcheck's extend kernel" | tee "$OUT/release.log"
timeout 240 python3 bench/runtime/confirm_release.py "$REPORT" --device cuda \
  --out "$OUT/release_ours.json" 2>&1 | tee -a "$OUT/release.log"
echo "== $REPORT: SGLang's extend_attention_fwd ($SGL)" | tee -a "$OUT/release.log"
PYTHONPATH="$PWD/$SGL${PYTHONPATH:+:$PYTHONPATH}" timeout 240 python3 bench/runtime/confirm_release.py \
  "$REPORT" --device cuda --kernel "sglang.srt.layers.attention.triton_ops.extend_attention:extend_attention_fwd" \
  --kernel-adapter sglang --out "$OUT/release_sglang.json" 2>&1 | tee -a "$OUT/release.log"
