#!/usr/bin/env bash
# Installs the fsdpx Python package the way a user would, offline: a fresh venv (python3 -m venv), then
# `pip install --no-build-isolation --no-index .` from the repository root, then, from another folder,
# `import fsdpx; fsdpx.plan(...)` and the `fsdpx` command the wheel puts on PATH. Prints the times.
# Needs python3-venv, python3-dev, pybind11-dev and the C++ build dependencies (tools/install_deps.sh).
# Not a ctest test: the first run compiles the libraries position-independent (minutes on 2 cores).
# Usage: python/check_pip_install.sh [PYTHON]   (default /usr/bin/python3, Debian's)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-/usr/bin/python3}
work=$(mktemp -d /tmp/fsdpx-pip-check.XXXXXX)
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
"$python" -m venv "$work/venv"
echo "venv: $("$work/venv/bin/python" --version) at $work/venv ($(( $(date +%s) - start )) s)"
t=$(date +%s)
(cd "$root" && "$work/venv/bin/pip" install --no-build-isolation --no-index . >"$work/pip.log" 2>&1) || {
  tail -n 40 "$work/pip.log" >&2
  echo "check_pip_install.sh: pip install failed (log above)" >&2
  exit 1
}
echo "pip install --no-build-isolation --no-index .: $(( $(date +%s) - t )) s"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import fsdpx
plan = fsdpx.plan(model="llama3.1-8b", cluster="dgx-h100", nodes=1, seq=8192, global_batch=32)
step = fsdpx.simulate(plan)
assert plan["format"] == "fsdpx-plan/1", plan["format"]
assert 0 < step["mfu"] < 1, step["mfu"]
print(f"import fsdpx {fsdpx.__version__} from {fsdpx.__file__}: dp_shard {plan['parallelism']['dp_shard']}, "
      f"MFU {step['mfu']:.3f}")
PY
"$work/venv/bin/fsdpx" --version
"$work/venv/bin/fsdpx" plan --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --global-batch 32 \
  -o "$work/cli.plan.json" >/dev/null
"$work/venv/bin/python" -c "
import json, sys, fsdpx
same = fsdpx.plan(model='llama3.1-8b', cluster='dgx-h100', nodes=1, seq=8192, global_batch=32) == \
       json.load(open(sys.argv[1]))
print('installed fsdpx command and fsdpx.plan agree:', same)
sys.exit(0 if same else 1)" "$work/cli.plan.json"
echo "check_pip_install.sh: passed in $(( $(date +%s) - start )) s"
