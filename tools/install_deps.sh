#!/usr/bin/env bash
# Installs the Debian 12 packages fsdpx needs, skipping the apt work when they are all present.
# pkg-config finds OpenBLAS for the CPU executor; chromium renders `fsdpx report`'s HTML in its test
# (skipped without it); python3 (standard library only) parses JSON, CSV and TOML in the CLI tests.
# CUDA (nvcc, cuBLAS, NCCL under /usr/local/cuda) is optional and not installed here.
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev doctest-dev libbenchmark-dev libfmt-dev
          libopenblas-dev zlib1g-dev chromium chromium-driver python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
