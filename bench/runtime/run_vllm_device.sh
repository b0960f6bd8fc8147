#!/usr/bin/env bash
# Confirm vLLM findings on the GPU host: each replayed with idxcheck's extend kernel, captured in
# a CUDA graph and replayed. Logs go to $OUT (default ./device-out). Run from the repository root:
#
#   OUT=/tmp/out bash bench/runtime/run_vllm_device.sh REPORT
#
# REPORT is `idxcheck scan --format json` of the release's builders (made where the static
# checker runs, e.g. vLLM 0.26.0's ROCm AITER MLA decode; see bench/runtime/RESULTS.md); it is
# carried to the host, not committed.
set -u
OUT=${OUT:-device-out}
mkdir -p "$OUT"
REPORT=$1
export PYTHONUNBUFFERED=1

# shellcheck source=bench/runtime/device_env.sh
. bench/runtime/device_env.sh

echo "== $REPORT: idxcheck's extend kernel, CUDA graphs" | tee "$OUT/vllm.log"
timeout 240 python3 -m idxcheck confirm "$REPORT" --device cuda -o "$OUT/vllm_confirmed.json" \
  2>&1 | tee -a "$OUT/vllm.log"
python3 - "$OUT/vllm_confirmed.json" <<'PY' 2>&1 | tee -a "$OUT/vllm.log"
import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    c = f.get("confirmation", {})
    print(f["code"], f["path"], f["line"], f["mode"], c.get("status"), c.get("device"))
    print("   ", c.get("reason"))
PY
echo "== GPU tests of the runtime companion" | tee -a "$OUT/vllm.log"
timeout 240 python3 -m pytest -m gpu tests/runtime -q -rs -p no:cacheprovider 2>&1 | tail -5 \
  | tee -a "$OUT/vllm.log"
