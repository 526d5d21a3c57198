#!/usr/bin/env bash
# tests/tools/test_cuda_module.sh FSDPX MODULE_RELDIR CPU_BACKEND_LIB — issue 36's "no GPU library loaded until a
# command needs the GPU" in a CUDA build: fsdpx links no CUDA library and starts small; `run --backend cuda`
# dlopens the module libfsdpx_cuda.so from beside the binary or from its installed folder (MODULE_RELDIR,
# relative to the binary's); a missing, broken or foreign module is one line and exit 2. Issue 26's link
# boundary: no symbol the module takes from the binary is defined in the CPU backend's archive
# (CPU_BACKEND_LIB, libfsdp_cpu_backend.a). Leaves out training on a GPU (test_cuda, tools/gpu_check.sh).
set -u
FSDPX=$1
RELDIR=$2
CPU_LIB=$3
source "$(dirname "$0")/cli_check.sh"
module="$(dirname "$FSDPX")/libfsdpx_cuda.so"

! ldd "$FSDPX" | grep -qE 'libcuda|libcublas|libnccl'; check "ldd fsdpx: no CUDA, cuBLAS or NCCL library" $?
[ -f "$module" ]; check "libfsdpx_cuda.so is built beside fsdpx" $?
nm -D --defined-only "$module" | grep -qw fsdpx_cuda_place_ranks_v1; check "the module exports its versioned entry" $?
# The link boundary (issue 26): the module's undefined symbols against the CPU backend's defined ones. The
# latent attention and the MoE MLP run on the device (cuda_backend/cuda_mla_attention.h, cuda_moe_mlp.h), so
# nothing crosses.
nm -D --undefined-only "$module" | awk '{print $NF}' | sort -u >"$tmp/undefined"
nm --defined-only "$CPU_LIB" 2>/dev/null | awk 'NF == 3 && $2 ~ /^([A-TV-Z]|u)$/ {print $3}' | sort -u >"$tmp/cpu_defined"
comm -12 "$tmp/undefined" "$tmp/cpu_defined" | c++filt >"$tmp/crossing"
echo "  libfsdpx_cuda.so takes $(wc -l <"$tmp/crossing") symbols from the CPU backend"
[ -s "$tmp/cpu_defined" ]; check "the CPU backend's archive has defined symbols" $?
[ ! -s "$tmp/crossing" ] || sed 's/^/  takes from the CPU backend: /' "$tmp/crossing"
[ ! -s "$tmp/crossing" ]; check "the module takes nothing from the CPU backend" $?
if [[ -x /usr/bin/time ]]; then
  /usr/bin/time -f %M -o "$tmp/rss" "$FSDPX" --version >/dev/null
  echo "  fsdpx --version: peak RSS $(cat "$tmp/rss") kB"
  [ "$(cat "$tmp/rss")" -lt 51200 ]; check "fsdpx --version stays under 50 MB resident (no CUDA library mapped)" $?
fi

"$FSDPX" plan --model llama-small --cluster dgx-h100 --world-size 1 --seq 64 --global-batch 8 -o "$tmp/gpu.json" >/dev/null
# expect2 NAME NEEDLE BINARY: `run --backend cuda` exits 2 with one stderr line containing NEEDLE.
expect2() {
  timeout 60 "$3" run --plan "$tmp/gpu.json" --steps 1 --backend cuda >/dev/null 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]] && grep -qF -- "$2" "$tmp/err"
  local ok=$?
  [[ $ok -eq 0 ]] || echo "  $1: exit $rc, stderr: $(head -c 400 "$tmp/err")"
  check "$1" $ok
}

# Without a GPU the module's own code answers (cudaGetDeviceCount): it was found, loaded and called.
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect2 "module beside the binary is loaded (no device here)" "no CUDA device was found (cudaGetDeviceCount" "$FSDPX"
  mkdir -p "$tmp/inst/bin" "$tmp/inst/bin/$RELDIR"
  cp "$FSDPX" "$tmp/inst/bin/" && cp "$module" "$tmp/inst/bin/$RELDIR/"
  expect2 "module in the installed folder is loaded" "no CUDA device was found (cudaGetDeviceCount" "$tmp/inst/bin/fsdpx"
fi
mkdir -p "$tmp/none" "$tmp/junk" "$tmp/foreign"
cp "$FSDPX" "$tmp/none/" && cp "$FSDPX" "$tmp/junk/" && cp "$FSDPX" "$tmp/foreign/"
expect2 "no module: one line naming the file" "this fsdpx has no CUDA backend: libfsdpx_cuda.so is neither beside it" "$tmp/none/fsdpx"
echo "not a library" >"$tmp/junk/libfsdpx_cuda.so"
expect2 "unloadable module: one line with the loader's reason" "cannot load the CUDA backend $tmp/junk/libfsdpx_cuda.so" "$tmp/junk/fsdpx"
libz=$(ldd "$FSDPX" | awk '/libz\.so/ {print $3}')
if [ -n "$libz" ]; then
  cp "$libz" "$tmp/foreign/libfsdpx_cuda.so"
  expect2 "a library without the entry: refused by name" "has no entry fsdpx_cuda_place_ranks_v1" "$tmp/foreign/fsdpx"
fi
# Other commands never touch the module: a plan is made by the copy without one.
"$tmp/none/fsdpx" simulate --plan "$tmp/gpu.json" >/dev/null; check "simulate runs without the module" $?
finish
