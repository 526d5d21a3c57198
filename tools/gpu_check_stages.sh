#!/usr/bin/env bash
# The stages of tools/gpu_check.sh, one function each, run as `bash gpu_check_stages.sh FUNC ARGS` under
# the runner's timeout. A stage prints one "RESULT: ..." line (the row's detail) or "NOT RUN: why" (the
# row then reads "not run", never "ok"), and exits non-zero when what it checked failed. Paths come from
# the runner: GPU_CHECK_ROOT, GPU_CHECK_BUILD, GPU_CHECK_WORK, GPU_CHECK_DRY (1: no GPU step may run).
# The acceptance compares with the references computed on the CPU and carried in tests/data/gpu_check/.
set -uo pipefail
R="$GPU_CHECK_ROOT" B="$GPU_CHECK_BUILD" W="$GPU_CHECK_WORK"
FX="$R/tests/data/gpu_check"
A="$W/accept"
TEST_CUDA="$B/tests/cuda/test_cuda"
FSDPX="$B/fsdpx"
REPORT="$R/tools/gpu_acceptance_report.py"
KERNEL_FILES="test_cuda_norm.cpp test_cuda_elementwise.cpp test_cuda_embedding_loss.cpp test_cuda_gemm.cpp test_cuda_attention.cpp
              test_cuda_attention_tc.cpp test_cuda_fp8.cpp test_cuda_moe.cpp"
mkdir -p "$A"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v compute-sanitizer >/dev/null || [ ! -x /usr/local/cuda/compute-sanitizer/compute-sanitizer ] ||
  export PATH="/usr/local/cuda/compute-sanitizer:$PATH"

nccl_wheel_root() {  # NCCL of the pip wheel nvidia-nccl-cu13 (PyTorch's) when the toolkit has none
  python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null
}

nccl_header() {
  local h
  for h in /usr/local/cuda/include/nccl.h /usr/include/nccl.h "$(nccl_wheel_root)/include/nccl.h"; do
    [ -f "$h" ] && { echo "$h"; return; }
  done
}

nccl_version_of() {  # "2.28.3" from the header's NCCL_MAJOR/MINOR/PATCH
  awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{v[$2]=$3} END{if (v["NCCL_MAJOR"]) print v["NCCL_MAJOR"]"."v["NCCL_MINOR"]"."v["NCCL_PATCH"]}' "$1"
}

preflight() {  # seconds: what the build and the checks need, named when missing
  local missing=() notes=() h lib absent=""
  for h in nlohmann/json.hpp CLI/CLI.hpp doctest/doctest.h fmt/format.h; do
    [ -f "$R/.deps/include/$h" ] || absent+=" $h"
  done
  [ -n "$absent" ] && missing+=(".deps/include:$absent (run tools/carry_deps.sh here and carry .deps)")
  for f in llama-small.cpu.json llama-small.torch.json llama-small.sha256; do
    [ -f "$FX/$f" ] || missing+=("tests/data/gpu_check/$f")
  done
  for tool in cmake ninja python3; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ "$GPU_CHECK_DRY" = 1 ]; then
    notes+=("GPU, nvcc, cuBLASLt, NCCL, cuDNN: not checked (dry run)")
  else
    command -v nvcc >/dev/null && notes+=("nvcc $(nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)") || missing+=(nvcc)
    nvidia-smi -L >/dev/null 2>&1 && notes+=("$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)") ||
      missing+=("a GPU (nvidia-smi -L failed)")
    lib="$(ls /usr/local/cuda/lib64/libcublasLt.so* /usr/local/cuda/targets/*/lib/libcublasLt.so* 2>/dev/null | head -n 1)"
    [ -n "$lib" ] && notes+=("cuBLASLt $(basename "$lib")") || missing+=("cuBLASLt (libcublasLt.so in /usr/local/cuda)")
    h="$(nccl_header)"
    [ -n "$h" ] && notes+=("NCCL $(nccl_version_of "$h") ($h)") || notes+=("NCCL: none (its tests will read not run)")
    python3 -c 'import nvidia.cudnn' 2>/dev/null && notes+=("cuDNN wheel present (fsdpx does not use it)") || notes+=("cuDNN: none (unused)")
    command -v compute-sanitizer >/dev/null || notes+=("compute-sanitizer: none (memcheck will read not run)")
    notes+=("$(python3 -c 'import torch; print("torch", torch.__version__, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -n 1)")
  fi
  nproc_n="$(nproc)"; notes+=("$nproc_n cores")
  [ "$nproc_n" -lt 16 ] && notes+=("fewer than 16 cores: the build limit assumes 16")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "RESULT: missing: $(IFS=';'; echo "${missing[*]}")"
    return 1
  fi
  echo "RESULT: $(IFS=';'; echo "${notes[*]}")"
}

# CUDA's and NCCL's libraries for binaries built on another machine (--prebuilt): the toolkit's folders
# and the NCCL wheel's lib/ (its libnccl.so.2 is on no default loader path).
nccl_lib="$(nccl_wheel_root)"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/lib${nccl_lib:+:$nccl_lib/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

prebuilt_loads() {  # the carried binaries start here: every library they need resolves
  local P="$GPU_CHECK_PREBUILT" f missing
  for f in fsdpx libfsdpx_cuda.so tests/cuda/test_cuda tests/cuda/bench_cuda_kernels; do
    [ -e "$P/$f" ] || { echo "prebuilt: $f missing"; return 1; }
    missing="$(ldd "$P/$f" 2>&1 | grep 'not found')"
    [ -z "$missing" ] || { echo "prebuilt: $f: $missing"; return 1; }
  done
  "$P/fsdpx" --version && "$P/tests/cuda/test_cuda" --list-test-cases >/dev/null
}

configure() {
  if [ -n "${GPU_CHECK_PREBUILT:-}" ]; then
    if prebuilt_loads; then
      mkdir -p "$B/tests/cuda"
      cp "$GPU_CHECK_PREBUILT/fsdpx" "$GPU_CHECK_PREBUILT/libfsdpx_cuda.so" "$B/"
      cp "$GPU_CHECK_PREBUILT/tests/cuda/test_cuda" "$GPU_CHECK_PREBUILT/tests/cuda/bench_cuda_kernels" "$B/tests/cuda/"
      touch "$B/.prebuilt"
      echo "RESULT: prebuilt binaries load here ($(cat "$GPU_CHECK_PREBUILT/commit" 2>/dev/null)): no configure, no build"
      return 0
    fi
    echo "prebuilt binaries do not load here: configuring and building from source"
  fi
  rm -f "$B/.prebuilt"
  local args=(-S "$R" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDPX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
              -DFSDPX_DEPS_DIR="$R/.deps" -DFSDPX_BUILD_BENCH=OFF) h
  h="$(nccl_header)"
  [ -n "$h" ] && args+=(-DNCCL_ROOT="$(dirname "$(dirname "$h")")")
  cmake "${args[@]}" | tee "$W/configure.out"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  echo "RESULT: $(grep -o 'NCCL=[A-Z]* ([^)]*)' "$W/configure.out" | tail -n 1)"
}

build() {
  [ -f "$B/.prebuilt" ] && { echo "RESULT: prebuilt (configure stage)"; return 0; }
  local t0=$SECONDS
  cmake --build "$B" -j "$(nproc)" --target fsdpx test_cuda bench_cuda_kernels || return 1
  echo "RESULT: fsdpx, test_cuda, bench_cuda_kernels in $((SECONDS - t0)) s on $(nproc) cores"
}

# doctest's --source-file filter runs one test file's cases; the runner reads the summary line.
kernel_file() { CUDA_LAUNCH_BLOCKING=1 "$TEST_CUDA" -sf="*$1"; }
test_file() { "$TEST_CUDA" -sf="*$1"; }

memcheck() {
  command -v compute-sanitizer >/dev/null || { echo "NOT RUN: compute-sanitizer is not on PATH"; return 0; }
  local filter="" f
  for f in $KERNEL_FILES; do filter+="${filter:+,}*$f"; done
  compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 "$TEST_CUDA" -sf="$filter"
}

nccl_cases() { "$TEST_CUDA" --list-test-cases 2>/dev/null | grep -c '^nccl:'; }

nccl_file() {
  [ "$(nccl_cases)" -gt 0 ] || { echo "NOT RUN: built without NCCL (no nccl.h and libnccl at configure)"; return 0; }
  "$TEST_CUDA" -sf="*test_cuda_nccl_communicator.cpp" -tce="*two ranks*"
}

nccl_two_ranks() {  # the test prints "NOT RUN: ..." itself where NCCL refuses two ranks on one GPU (< 2.30)
  [ "$(nccl_cases)" -gt 0 ] || { echo "NOT RUN: built without NCCL (no nccl.h and libnccl at configure)"; return 0; }
  NCCL_MULTI_RANK_GPU_ENABLE=1 "$TEST_CUDA" -tc="*two ranks on one GPU*"
}

bench() {  # the kernels' table, then PyTorch SDPA at the tensor-core attention rows' shapes
  "$B/tests/cuda/bench_cuda_kernels" | tee "$A/bench.md" || return 1
  python3 "$R/tests/cuda/bench_sdpa.py" | tee -a "$A/bench.md"
  echo "RESULT: $(grep -c '^| ' "$A/bench.md") table rows, $(grep -c '^sdpa ' "$A/bench.md") SDPA lines (gpu_check.log)"
}

# Issue 29's qkv GEMM: FSDPX_GEMM_ALGO=search (executor/cuda/gemm_algo_choice.h) beside cuBLASLt's heuristic,
# as bench rows of the 1B qkv shapes and as the 1B plan's run (beside accept_1b_fsdpx's run, which used the
# heuristic). An opt-in path being measured: whatever it does, the stage reports it and passes.
gemm_search() {
  local bench rc=0 heur srch
  plan_1b || { echo "RESULT: no 1B plan (fsdpx plan failed)"; return 0; }
  bench="$("$B/tests/cuda/bench_cuda_kernels" --gemm-search 2>&1)" || rc=$?
  echo "$bench" | tee "$A/gemm_search.md"
  [ "$rc" = 0 ] || bench="bench_cuda_kernels --gemm-search FAILED (rc $rc)"
  rc=0
  FSDPX_GEMM_ALGO=search "$FSDPX" run --plan "$A/perf.json" --backend cuda --steps 6 --format json \
    >"$A/perf_search.run.json" 2>"$A/perf_search.err" || rc=$?
  cat "$A/perf_search.err"
  heur="$(python3 "$REPORT" tps "$A/perf.json" "$A/perf.run.json" | cut -d' ' -f1)"
  if [ "$rc" = 0 ]; then srch="$(python3 "$REPORT" tps "$A/perf.json" "$A/perf_search.run.json" | cut -d' ' -f1)"
  else srch="FAILED (rc $rc: $(tail -n 1 "$A/perf_search.err" | cut -c1-120))"; fi
  local ms  # the qkv forward rows at N 8192: heuristic, search
  ms="$(echo "$bench" | awk -F'|' '$3 ~ /^ 8192x2048x3072 $/ && $2 ~ /gemm_qkv_fwd_/ { gsub(/ /, "", $4); printf "%s ", $4 }')"
  echo "RESULT: qkv fwd 8192x2048x3072 heuristic/search ms: ${ms:-none}; 1B tokens/s heuristic $heur, search $srch"
  return 0
}

same_tensors() {  # DIR INIT BATCHES HASHES: the tensors' hashes (not the files': a header names a path) vs the CPU run's
  (cd "$1" && python3 "$REPORT" payload-sha256 "$2" "$3") | diff -q - "$4" >/dev/null &&
    echo "weights and batches identical to the CPU run's" || echo "weights or batches DIFFER from the CPU run's"
}

# llama-small, 20 steps, against the CPU fp32 and PyTorch fp32 losses of the same seeded weights and
# batches (tests/data/gpu_check/README.md); the weights' and batches' hashes prove they are the same.
accept_small() {
  "$FSDPX" plan --model llama-small --cluster dgx-h200 --world-size 1 --seq 128 --global-batch 8 -o "$A/small1.json" || return 1
  "$FSDPX" run --plan "$A/small1.json" --backend cuda --steps 20 --format json --save-init-weights "$A/init.safetensors" \
    --dump-batches "$A/batches.safetensors" >"$A/cuda1.json" || return 1
  local same cpu torch
  same="$(same_tensors "$A" init.safetensors batches.safetensors "$FX/llama-small.sha256")"
  cpu="$(python3 "$REPORT" losses "$A/cuda1.json" "$FX/llama-small.cpu.json" 2e-2)"
  torch="$(python3 "$REPORT" losses "$A/cuda1.json" "$FX/llama-small.torch.json" 2e-2)"
  echo "RESULT: vs CPU fp32: $cpu; vs PyTorch fp32: $torch; $same"
  [[ $cpu == pass* && $torch == pass* && $same != *DIFFER* ]]
}

accept_threads() {  # N ranks as threads on one GPU (in-process communicator), same global batch
  local n="$1" res
  "$FSDPX" plan --model llama-small --cluster dgx-h200 --world-size "$n" --seq 128 --global-batch 8 -o "$A/small$n.json" || return 1
  "$FSDPX" run --plan "$A/small$n.json" --backend cuda --single-process --steps 20 --format json >"$A/threads$n.json" || return 1
  res="$(python3 "$REPORT" losses "$A/threads$n.json" "$FX/llama-small.cpu.json" 2e-2)"
  echo "RESULT: $n ranks vs CPU fp32: $res"
  [[ $res == pass* ]]
}

accept_parallel() {  # llama-small with tensor or pipeline parallelism of degree N as threads on one GPU
  local flag="$1" n="$2" res
  "$FSDPX" plan --model llama-small --cluster dgx-h200 --world-size "$n" --"$flag" "$n" --seq 128 --global-batch 8 \
    -o "$A/small_$flag$n.json" || return 1
  "$FSDPX" run --plan "$A/small_$flag$n.json" --backend cuda --single-process --steps 20 --format json \
    >"$A/$flag$n.json" || return 1
  res="$(python3 "$REPORT" losses "$A/$flag$n.json" "$FX/llama-small.cpu.json" 2e-2)"
  echo "RESULT: $flag $n vs CPU fp32: $res"
  [[ $res == pass* ]]
}

accept_model() {  # a mixture-of-experts (and latent-attention) model, 20 steps, against its CPU fp32 losses
  local m="$1" res same
  "$FSDPX" plan --model "$m" --cluster dgx-h200 --world-size 1 --seq 128 --global-batch 8 -o "$A/$m.json" || return 1
  "$FSDPX" run --plan "$A/$m.json" --backend cuda --steps 20 --format json \
    --save-init-weights "$A/$m.init.safetensors" --dump-batches "$A/$m.batches.safetensors" >"$A/$m.run.json" || return 1
  same="$(same_tensors "$A" "$m.init.safetensors" "$m.batches.safetensors" "$FX/$m.sha256")"
  rm -f "$A/$m.init.safetensors" "$A/$m.batches.safetensors"
  res="$(python3 "$REPORT" losses "$A/$m.run.json" "$FX/$m.cpu.json" 2e-2)"
  echo "RESULT: $m vs CPU fp32: $res; $same"
  [[ $res == pass* && $same != *DIFFER* ]]
}

plan_1b() {
  [ -f "$A/perf.json" ] ||
    "$FSDPX" plan --model llama3.2-1b --cluster dgx-h200 --world-size 1 --seq 2048 --global-batch 8 -o "$A/perf.json"
}

accept_1b_fsdpx() {  # a few steps of the plan fsdpx chooses for one H200; the run's wall time beside its steps'
  plan_1b || return 1
  # GPU utilisation and memory every second, to tell host start-up from device work if the run is slow.
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 1 >"$A/perf.smi.csv" 2>&1 &
  local smi=$! t0=$SECONDS rc=0
  "$FSDPX" run --plan "$A/perf.json" --backend cuda --steps 6 --format json >"$A/perf.run.json" || rc=$?
  kill "$smi" 2>/dev/null
  echo "whole run: $((SECONDS - t0)) s; GPU samples (time, utilisation, memory):"; cat "$A/perf.smi.csv"
  [ "$rc" = 0 ] || return 1
  echo "RESULT: $(python3 "$REPORT" tps "$A/perf.json" "$A/perf.run.json"); whole run $((SECONDS - t0)) s"
}

accept_1b_torch() {  # PyTorch eager or torch.compile on the same model, batch and accumulation
  local mode="$1" accum flag=()
  plan_1b || return 1
  accum=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['training']; print(t['global_batch']//t['micro_batch'])" "$A/perf.json")
  [ "$mode" = compile ] && flag=(--compile)
  python3 "$R/tools/torch_reference.py" --bench --plan "$A/perf.json" --device cuda --dtype bf16 --accum "$accum" \
    --steps 4 --warmup 2 "${flag[@]}" -o "$A/torch_$mode.json" || return 1
  echo "RESULT: $(python3 "$REPORT" versus "$A/perf.run.json" "$A/torch_$mode.json" "$A/perf.json" "$mode")"
}

perf_table() {  # the measured 1B run beside the simulator's prediction and PyTorch's (markdown rows)
  "$FSDPX" simulate --plan "$A/perf.json" --format json >"$A/perf.sim.json" || return 1
  local mode  # PyTorch's rows of an earlier call (resumed: its torch_*.json copied to .gpucheck/)
  for mode in eager compile; do
    [ -f "$A/torch_$mode.json" ] || [ ! -f "$R/.gpucheck/torch_$mode.json" ] || cp "$R/.gpucheck/torch_$mode.json" "$A/"
  done
  python3 "$REPORT" perf "$A/perf.json" "$A/perf.run.json" "$A/perf.sim.json" "$A/torch_eager.json" \
    "$A/torch_compile.json" | tee "$A/perf.md"
  echo "RESULT: $(head -n 1 "$A/perf.md" | cut -d'|' -f3 | sed 's/^ *//; s/ *$//') (gpu_check.log has the table)"
}

profile_b() {  # issue 29's direction: calibrate on another plan's profile (plan B), predict the 1B plan (A)
  local b="$R/.gpucheck/planb.json" res  # plan B of an earlier call, else the one fsdpx chooses on dgx-h200
  if [ ! -f "$b" ]; then
    b="$A/planb_default.json"
    "$FSDPX" plan --model llama3.2-1b --cluster dgx-h200 --world-size 1 --seq 1024 --global-batch 16 -o "$b" || return 1
  fi
  "$FSDPX" run --plan "$b" --backend cuda --steps 6 --format json --profile "$A/planb.profile.json" >/dev/null || return 1
  "$FSDPX" calibrate --profile "$A/planb.profile.json" -o "$A/calibrated_b.json" || return 1
  python3 "$REPORT" with-cluster "$A/perf.json" "$A/calibrated_b.json" "$A/perf_cal_b.json" || return 1
  "$FSDPX" simulate --plan "$A/perf_cal_b.json" --format json >"$A/perf_cal_b.sim.json" || return 1
  res="$(python3 "$REPORT" predict "$A/perf.run.json" "$A/perf_cal_b.sim.json" 0.10)"
  echo "RESULT: the 1B plan predicted with the cluster calibrated on plan B's profile: $res"
  [[ $res == pass* ]]
}

calibrate() {  # fsdpx calibrate from a profile of plan A (the 1B plan), then plan B predicted and measured
  "$FSDPX" run --plan "$A/perf.json" --backend cuda --steps 6 --format json --profile "$A/perf.profile.json" \
    >/dev/null || return 1
  "$FSDPX" calibrate --profile "$A/perf.profile.json" -o "$A/calibrated.json" || return 1
  "$FSDPX" plan --model llama3.2-1b --cluster "$A/calibrated.json" --world-size 1 --seq 1024 --global-batch 16 \
    -o "$A/planb.json" || return 1
  "$FSDPX" simulate --plan "$A/planb.json" --format json >"$A/planb.sim.json" || return 1
  "$FSDPX" run --plan "$A/planb.json" --backend cuda --steps 8 --format json >"$A/planb.run.json" || return 1
  # Plan B's own profile too, for the other direction (calibrate on B, predict A: gpu_acceptance_report.py).
  "$FSDPX" run --plan "$A/planb.json" --backend cuda --steps 6 --format json --profile "$A/planb.profile.json" \
    >/dev/null || echo "plan B profile run failed"
  local res
  res="$(python3 "$REPORT" predict "$A/planb.run.json" "$A/planb.sim.json" 0.10)"
  echo "RESULT: plan B (seq 1024, batch 16) predicted with the cluster calibrated on plan A: $res"
  [[ $res == pass* ]]
}

"$@"
