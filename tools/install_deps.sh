#!/usr/bin/env bash
# Installs the Debian 12 packages fsdpx needs, skipping the apt work when they are all present.
# Without arguments: what building and running `fsdpx` needs (the README's first command). pkg-config finds
# OpenBLAS for the CPU executor; zlib reads gzipped profiler traces (kineto/); ccache serves repeated builds
# (.ci/run and the sanitizer trees use it when present).
# With --tests, also what the tests need (the README's second command): doctest and Google Benchmark; python3
# (standard library only) parses JSON, CSV and TOML in the CLI tests; chromium renders `fsdpx report`'s HTML in
# its test (skipped without it); zsh and fish run the completion test of their scripts (skipped without them);
# python3-dev, python3-venv and pybind11-dev build the optional Python package (python/, docs/python.md).
# CUDA (nvcc, cuBLAS, NCCL under /usr/local/cuda) is optional and not installed here.
set -euo pipefail
packages=(g++ cmake ninja-build ccache pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libopenblas-dev zlib1g-dev)
case "${1:-}" in
  "") ;;
  --tests) packages+=(doctest-dev libbenchmark-dev chromium chromium-driver python3 python3-dev python3-venv pybind11-dev
                      zsh fish) ;;
  *) echo "usage: tools/install_deps.sh [--tests]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # apt's and dpkg's progress (about a thousand lines) goes to a log; on failure its end is shown.
  log=$(mktemp /tmp/fsdpx-install-deps.XXXXXX.log)
  # One line within 120 columns: the package names head the log instead.
  echo "installing ${#missing[@]} Debian packages (names and apt output: $log)"
  echo "missing: ${missing[*]}" >"$log"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
           "${missing[@]}"; } >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "install_deps.sh: apt-get failed; the whole log is $log" >&2
    exit 1
  fi
fi
