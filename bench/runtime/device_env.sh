# shellcheck shell=bash
# Sourced by the device scripts: records the host's versions in $OUT/env.log and makes
# `idxcheck.runtime_kernels` importable there (no network: the checkout itself is installed,
# dependencies are already in the image or not needed by the runtime companion).
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.version.cuda)'
} 2>&1 | tee "$OUT/env.log"

python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 \
  || echo "editable install failed (see install.log)" | tee -a "$OUT/env.log"
if ! python3 -c 'import idxcheck.runtime_kernels' 2>/dev/null; then
  # Fallback: a package shim with the pyproject's package-dir mapping (idxcheck -> checker/,
  # idxcheck.rules -> rules/, idxcheck.runtime_kernels -> runtime_kernels/).
  mkdir -p /tmp/idxshim/idxcheck
  cat >/tmp/idxshim/idxcheck/__init__.py <<SHIM
import os as _os
__path__ = [_os.path.join("$PWD", "checker"), "$PWD"]
exec(compile(open(_os.path.join("$PWD", "checker", "__init__.py")).read(), "checker/__init__.py", "exec"))
SHIM
  export PYTHONPATH=/tmp/idxshim${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c 'import idxcheck.runtime_kernels.replay as r; print("idxcheck importable:", r.__file__)' \
  2>&1 | tee -a "$OUT/env.log"

