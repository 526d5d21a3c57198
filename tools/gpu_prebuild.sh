#!/usr/bin/env bash
# Builds, on this machine, the binaries tools/gpu_check.sh --prebuilt runs on the GPU machine, so that a
# device call spends no minutes compiling: sm_90, header-only dependencies from .deps (tools/carry_deps.sh;
# fmt header-only, no libfmt there), no Google Benchmark. The GPU machine has nvcc 13.0 and the CUDA 13
# libraries but no Debian packages: OpenBLAS is only dlopened by CPU runs, NCCL comes from PyTorch's wheel.
# Copies fsdpx, libfsdpx_cuda.so, test_cuda and bench_cuda_kernels (stripped) into .prebuilt/ with the
# commit they were built from; carry ".prebuilt" (ignore it in .git/info/exclude) and pass --prebuilt.
# A binary that does not load there makes gpu_check.sh configure and build from source instead.
# Usage: tools/gpu_prebuild.sh [BUILD_DIR, default build-prebuilt]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="${1:-$root/build-prebuilt}"
[ -d "$root/.deps/include/fmt" ] || bash "$root/tools/carry_deps.sh"
cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDPX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFSDPX_DEPS_DIR="$root/.deps" -DFSDPX_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON ${CMAKE_EXTRA_ARGS:-} >/dev/null
cmake --build "$b" --target fsdpx test_cuda bench_cuda_kernels
p="$root/.prebuilt"
rm -rf "$p"
mkdir -p "$p/tests/cuda"
cp "$b/fsdpx" "$b/libfsdpx_cuda.so" "$p/"
cp "$b/tests/cuda/test_cuda" "$b/tests/cuda/bench_cuda_kernels" "$p/tests/cuda/"
strip --strip-unneeded "$p/fsdpx" "$p/libfsdpx_cuda.so" "$p/tests/cuda/test_cuda" "$p/tests/cuda/bench_cuda_kernels"
git -C "$root" describe --always --dirty >"$p/commit"
du -sh "$p" | sed 's/^/gpu_prebuild: /'
