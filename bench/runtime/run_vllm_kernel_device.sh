#!/usr/bin/env bash
# Confirm vLLM findings on the GPU host with vLLM's own Triton kernel (`unified_attention`, read
# from a downloaded vLLM tree and imported with idxcheck's stand-ins for the rest of vLLM), each
# replay captured in a CUDA graph and replayed; beside it the same report with idxcheck's extend
# kernel, the layout with the fix applied, and the GPU tests of vLLM's kernel. Logs go to $OUT
# (default ./device-out). Run from the repository root:
#
#   OUT=/tmp/out bash bench/runtime/run_vllm_kernel_device.sh REPORT KERNEL_FILE
#
# REPORT is `idxcheck scan --format json` of the release's builders (see run_vllm_device.sh);
# KERNEL_FILE is the release's vllm/v1/attention/ops/triton_unified_attention.py, carried with
# its sibling triton_attention_helpers.py (e.g. copied under the ignored .carry/; never committed).
# The last step runs all GPU tests of tests/runtime with IDXCHECK_VLLM_KERNEL set.
set -u
OUT=${OUT:-device-out}
mkdir -p "$OUT"
REPORT=$1
KERNEL=$2
export PYTHONUNBUFFERED=1

# shellcheck source=bench/runtime/device_env.sh
. bench/runtime/device_env.sh

summary() {
  python3 - "$1" <<'PY'
import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    c = f.get("confirmation", {})
    print(f["code"], f["path"], f["line"], f["mode"], c.get("status"), c.get("device"), c.get("seconds"))
    print("   ", c.get("reason"))
PY
}

LOG="$OUT/vllm_kernel.log"
echo "== $REPORT: vLLM's unified_attention ($KERNEL), CUDA graphs" | tee "$LOG"
timeout 150 python3 -m idxcheck confirm "$REPORT" --device cuda --kernel "$KERNEL:unified_attention" \
  --kernel-adapter vllm -o "$OUT/vllm_kernel_confirmed.json" 2>&1 | tee -a "$LOG"
summary "$OUT/vllm_kernel_confirmed.json" 2>&1 | tee -a "$LOG"
python3 -c 'import json, sys; fs = json.load(open(sys.argv[1]))["findings"]; print("convention:", fs[0]["confirmation"].get("convention"))' \
  "$OUT/vllm_kernel_confirmed.json" 2>&1 | tee -a "$LOG"

echo "== the same report, idxcheck's extend kernel, CUDA graphs" | tee -a "$LOG"
timeout 90 python3 -m idxcheck confirm "$REPORT" --device cuda -o "$OUT/vllm_ours_confirmed.json" \
  2>&1 | tee -a "$LOG"
summary "$OUT/vllm_ours_confirmed.json" 2>&1 | tee -a "$LOG"

echo "== the layout with the fix applied (qo_indptr stride = tokens per request), vLLM's kernel" \
  | tee -a "$LOG"
python3 - "$REPORT" "$OUT/vllm_fixed.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["findings"] = [
    {**f, "replay": {**f["replay"], "qo_stride": None, "max_len": None}}
    for f in doc["findings"] if isinstance(f.get("replay"), dict) and f["replay"].get("tokens_per_req")
]
json.dump(doc, open(sys.argv[2], "w"))
PY
timeout 90 python3 -m idxcheck confirm "$OUT/vllm_fixed.json" --device cuda \
  --kernel "$KERNEL:unified_attention" --kernel-adapter vllm 2>&1 | tee -a "$LOG"
summary "$OUT/vllm_fixed.json" 2>&1 | tee -a "$LOG"

echo "== the report on this host's Triton interpreter, vLLM's kernel" | tee -a "$LOG"
timeout 90 python3 -m idxcheck confirm "$REPORT" --device cpu --kernel "$KERNEL:unified_attention" \
  --kernel-adapter vllm -o "$OUT/vllm_kernel_cpu.json" 2>&1 | tail -3 | tee -a "$LOG"
summary "$OUT/vllm_kernel_cpu.json" 2>&1 | tee -a "$LOG"

echo "== GPU tests of the runtime companion, vLLM's kernel among them" | tee -a "$LOG"
IDXCHECK_VLLM_KERNEL="$KERNEL" timeout 150 python3 -m pytest -m gpu tests/runtime -q -rs \
  -p no:cacheprovider 2>&1 | tail -6 | tee -a "$LOG"
