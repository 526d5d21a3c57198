#!/usr/bin/env bash
# tests/tools/sanitizers.sh — builds test_executor and test_launch in two extra trees, one with
# ThreadSanitizer (FSDPX_TSAN) and one with AddressSanitizer + UBSan (FSDPX_SANITIZE), and runs the thread
# communicator, watchdog, data-parallel, Trainer and kernel-pool tests there (kept short: the equivalence
# matrix runs only in the normal tree), all of test_launch (rendezvous threads, forked ranks, the local
# launcher), plus the device communicators and the whole CUDA backend (test_cuda_emulated) on the emulated
# CUDA runtime when CUDA headers were found.
# The TSan tree builds without OpenMP and BLAS, whose uninstrumented thread pools TSan cannot see into.
# Usage: sanitizers.sh <source dir> <build root> [tsan|asan|all]
set -euo pipefail
src=${1:?source dir}
root=${2:?build root}
which=${3:-all}
jobs=${FSDPX_SANITIZER_JOBS:-2}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
tests='collectives*,all_reduce is*,split builds*,a throwing rank*,mismatched*,watchdog*,data-parallel*'
tests+=',trainer: a rank*,trainer: HSDP*,trainer: state*,trainer: a non-finite*,trainer: peak*,sum_over_processes*,a job split*'
tests+=',every item runs*,slow items*,parallel_for uses*'  # the rank's kernel pool (kernel_pool.h)
tests+=',trainer: a trace*'  # per-rank op timelines, read after the rank threads join
tests+=',tensor parallelism:*,context parallelism*'  # the model's tp and cp collectives on rank threads
tests+=',thread communicator: posted sends*'  # post_send and wait_sends across rank threads

# The CUDA backend on the emulated runtime: everything under ASan; under TSan (several times slower) FSDP,
# HSDP and LoRA on 1-4 ranks, tp 2 and cp 2 (each beside dp_shard 2), 1F1B on 2 and 4 ranks (timings in
# docs/cuda.md, "ThreadSanitizer"); 1F1B at pp 2 x tp 2 and pp 2 x cp 2 (about 10 min under TSan on 2 loaded
# cores), the other schedules and the runs over the emulated NCCL's rendezvous sends run under TSan only by
# hand (-tc="emulated CUDA: 1F1B at pp 2*", -tc="*rendezvous sends: 1F1B*").
emulated_tests='*'
build_and_run() {  # name, extra cmake args...
  local name=$1; shift
  local dir="$root/sanitize-$name"
  cmake -S "$src" -B "$dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g" "$@" >/dev/null
  ninja -C "$dir" -j "$jobs" test_executor test_launch >/dev/null
  echo "== $name: test_executor -tc=\"$tests\""
  "$dir/tests/test_executor" -tc="$tests" --no-intro=true
  echo "== $name: test_launch (rendezvous threads, forked ranks, launcher)"
  "$dir/tests/test_launch" --no-intro=true
  if ninja -C "$dir" -t targets all | grep -q '^test_device_comm_emulated:'; then
    ninja -C "$dir" -j "$jobs" test_device_comm_emulated >/dev/null
    echo "== $name: test_device_comm_emulated"
    "$dir/tests/cuda/test_device_comm_emulated" --no-intro=true
  fi
  if ninja -C "$dir" -t targets all | grep -q '^test_cuda_emulated:'; then
    ninja -C "$dir" -j "$jobs" test_cuda_emulated >/dev/null
    echo "== $name: test_cuda_emulated -tc=\"$emulated_tests\" (the CUDA backend trains on the emulated runtime)"
    "$dir/tests/cuda/test_cuda_emulated" -tc="$emulated_tests" --no-intro=true
  fi
}

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
if [[ $which == tsan || $which == all ]]; then
  emulated_tests='emulated CUDA: FSDP*,emulated CUDA: HSDP*,emulated CUDA: LoRA*'
  emulated_tests+=',emulated CUDA: tp 2*,emulated CUDA: cp 2*,emulated CUDA: 1F1B on*'  # tp, cp, 1F1B
  emulated_tests+=',emulated CUDA: mixtral-tiny*,emulated CUDA: deepseek-tiny*'  # host-staged MoE and MLA, ep 1, 2, 4
  build_and_run tsan -DFSDPX_TSAN=ON -DFSDPX_USE_BLAS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON
fi
if [[ $which == asan || $which == all ]]; then
  emulated_tests='*'
  build_and_run asan -DFSDPX_SANITIZE=ON
fi
