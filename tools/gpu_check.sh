#!/usr/bin/env bash
# One call on the GPU machine (.library/device): configure a CUDA build for sm_90 with the carried
# header-only deps (.deps, from tools/carry_deps.sh), build fsdpx, the CUDA kernels and their tests, run
# `ctest -L gpu` and the kernel benchmarks, report the GPU, the driver and NCCL versions, try two NCCL
# ranks on one GPU (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; NVIDIA/nccl docs env.rst), then the
# issue's done-when checks (tools/gpu_acceptance.sh: correctness vs CPU and PyTorch, several ranks on
# one GPU, tokens/s and MFU vs PyTorch and the simulator, calibration). Writes a results table to
# $OUT/gpu_results.md when OUT is set (8 files at most). Usage, from the repository root:
#   tools/gpu_check.sh [build dir, default build-gpu] [stages, default tests,nccl,accept]
# A device call lasts 10 minutes at most: on a fresh machine run `tests,nccl` first, then `accept` in a
# second call while the machine is still warm (the build is kept), or everything at once if it fits.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build-gpu}"
stages=",${2:-tests,nccl,accept},"
want() { [[ $stages == *",$1,"* ]]; }
out="${OUT:-}"
log_dir="${out:-$root/$build}"
mkdir -p "$log_dir"
results=()  # "step|status|seconds|note"

step() {  # step NAME COMMAND...: runs it, logs to $log_dir/NAME.log, records status and time
  local name="$1"; shift
  local t0=$SECONDS status=ok rc=0
  echo "=== $name: $*"
  "$@" >"$log_dir/$name.log" 2>&1 || rc=$?
  if [ "$rc" = 77 ]; then status="skipped (77: no GPU)"; elif [ "$rc" != 0 ]; then status="FAILED (rc $rc)"; fi
  tail -n 25 "$log_dir/$name.log"
  results+=("$name|$status|$((SECONDS - t0))|$name.log")
  [ "$rc" = 0 ]
}

nccl_root() {  # NCCL of the pip wheel (nvidia-nccl-cu13) when the toolkit has none
  python3 - <<'PY' 2>/dev/null
import os, nvidia.nccl as m
print(list(m.__path__)[0])
PY
}

echo "=== machine"
nvidia-smi || echo "nvidia-smi failed"
nvcc --version 2>/dev/null | tail -n 2 || echo "nvcc not on PATH"
torch_nccl="$(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1 | tail -n 1)"
echo "torch: $torch_nccl"

cmake_args=(-S "$root" -B "$root/$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDPX_CUDA=ON
            -DCMAKE_CUDA_ARCHITECTURES=90 -DFSDPX_DEPS_DIR="$root/.deps" -DFSDPX_BUILD_BENCH=OFF)
if [ -z "$(find /usr/local/cuda/include /usr/include -maxdepth 1 -name nccl.h 2>/dev/null | head -n 1)" ]; then
  nr="$(nccl_root)"
  [ -n "$nr" ] && cmake_args+=(-DNCCL_ROOT="$nr") && echo "NCCL from the pip wheel: $nr"
fi
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"

if step configure cmake "${cmake_args[@]}" &&
   step build ninja -C "$root/$build" fsdpx test_cuda bench_cuda_kernels; then
  want tests && step ctest_gpu ctest --test-dir "$root/$build" -L gpu --output-on-failure -V
  want tests && step bench "$root/$build/tests/cuda/bench_cuda_kernels"
  # acceptance.md stays in the build folder: $OUT gets it inside gpu_results.md (8-file limit).
  want accept && step acceptance "$root/tools/gpu_acceptance.sh" "$root/$build" "$root/$build"
fi

# Two NCCL ranks on this one GPU through torch.distributed (its bundled NCCL).
multi_rank_py='
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
def run(rank, path):
    dist.init_process_group("nccl", init_method="file://" + path, rank=rank, world_size=2)
    x = torch.full((1024,), float(rank + 1), device="cuda:0")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    assert x[0].item() == 3.0, x[0].item()
    dist.destroy_process_group()
if __name__ == "__main__":
    path = "/tmp/fsdpx_nccl_store_%d" % os.getpid()
    mp.spawn(run, args=(path,), nprocs=2)
    print("two ranks on one GPU: all_reduce ok")
'
export NCCL_MULTI_RANK_GPU_ENABLE=1
want nccl && step nccl_two_ranks_one_gpu timeout 180 python3 -c "$multi_rank_py"
# fsdpx's own NCCL communicator with the variable set: its two-ranks-on-one-GPU case runs where NCCL >= 2.30.
want nccl && [ -x "$root/$build/tests/cuda/test_cuda" ] &&
  step nccl_communicator timeout 300 "$root/$build/tests/cuda/test_cuda" -tc="nccl:*"
unset NCCL_MULTI_RANK_GPU_ENABLE

{
  echo "# fsdpx GPU check"
  echo
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -n 1)"
  echo "- torch / NCCL: $torch_nccl"
  echo
  echo "| step | status | seconds | log |"
  echo "|---|---|---|---|"
  for r in "${results[@]}"; do echo "| ${r//|/ | } |"; done
  if want accept && [ -f "$root/$build/acceptance.md" ]; then
    echo
    cat "$root/$build/acceptance.md"
  fi
  if [ -f "$log_dir/bench.log" ]; then
    echo
    echo "## Kernel benchmarks"
    echo
    grep '^|' "$log_dir/bench.log" || true
  fi
  if [ -f "$log_dir/ctest_gpu.log" ]; then
    echo
    echo "## test_cuda maxdiff lines"
    echo
    echo '```'
    grep -E "maxdiff|SKIPPED|test cases|assertions|ERROR|FAILED" "$log_dir/ctest_gpu.log" | sed 's/^[0-9]*: //' | head -n 80
    echo '```'
    # LoRA and fp16 (tests/cuda/test_cuda_lora.cpp, test_cuda_fp16.cpp; docs/lora.md, docs/cuda.md): their
    # lines apart, the 80 above may not reach them.
    echo
    echo "## LoRA and fp16 on CUDA (test_cuda_lora, test_cuda_fp16)"
    echo
    echo '```'
    grep -E "LoRA|fp16" "$log_dir/ctest_gpu.log" | sed 's/^[0-9]*: //' | head -n 120
    echo '```'
  fi
} >"$log_dir/gpu_results.md"
echo "=== results ($log_dir/gpu_results.md)"
cat "$log_dir/gpu_results.md"
