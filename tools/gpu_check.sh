#!/usr/bin/env bash
# The whole GPU check as ONE device call (.library/device: 10 minutes a command, 15 in all, a machine
# that goes back 30 s after a call): preflight, build (sm_90), test_cuda once per test file under its
# own timeout (kernel files first, with CUDA_LAUNCH_BLOCKING=1), compute-sanitizer memcheck on the kernel
# files, a short benchmark and a light acceptance against the CPU and PyTorch references carried in
# tests/data/gpu_check/ (stages: tools/gpu_check_stages.sh). Every stage appends its row to
# $OUT/gpu_rows.tsv as it ends; a stage that did not test anything reads "not run (...)", never "ok".
# Leaves out: several GPUs, NCCL processes, calibration (tools/gpu_acceptance.sh, a later call).
# Usage, from the repository root (docs/cuda.md "Test on a GPU machine" gives the exact device call):
#   tools/gpu_check.sh [--dry-run] [--resume ROWS.tsv] [--build DIR] [--deadline S] [--prebuilt DIR]
#   --dry-run     the whole control flow here with every GPU step stubbed; prints "budget: N s"
#   --resume F    keep the final rows of an earlier call (its gpu_rows.tsv) and run only what it left undone
#   --deadline S  seconds this call may use (default 570): a stage that would end later is "not run (call time)"
#   --prebuilt D  binaries built elsewhere for sm_90 (D/fsdpx, D/libfsdpx_cuda.so, D/tests/cuda/test_cuda,
#                 D/tests/cuda/bench_cuda_kernels; tools/gpu_prebuild.sh makes it): used when they load here,
#                 which skips the configure and the build; otherwise both run as without it
# Dry-run test hooks: GPU_CHECK_STUB_RC_<stage>=N and GPU_CHECK_STUB_OUT_<stage>=TEXT set a stub's result.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stages_sh="$root/tools/gpu_check_stages.sh"
dry=0 resume="" build="build-gpu" deadline_s=570 prebuilt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --resume) resume="$2"; shift ;;
    --build) build="$2"; shift ;;
    --deadline) deadline_s="$2"; shift ;;
    --prebuilt) prebuilt="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument '$1' (see the header of tools/gpu_check.sh)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$resume" ] && [ ! -r "$resume" ]; then
  echo "gpu_check.sh: --resume $resume: no such file" >&2; exit 2
fi
if [ -n "$prebuilt" ] && [ ! -x "$prebuilt/tests/cuda/test_cuda" ]; then
  echo "gpu_check.sh: --prebuilt $prebuilt: no tests/cuda/test_cuda there" >&2; exit 2
fi
[[ $build == /* ]] || build="$root/$build"
[[ -z $prebuilt || $prebuilt == /* ]] || prebuilt="$root/$prebuilt"
out="${OUT:-$build/gpu_check_out}"
work="$build/gpu_check"
mkdir -p "$out" "$work/logs"
rows="$out/gpu_rows.tsv" md="$out/gpu_results.md" biglog="$out/gpu_check.log"
: >"$rows"; : >"$biglog"
export GPU_CHECK_ROOT="$root" GPU_CHECK_BUILD="$build" GPU_CHECK_WORK="$work" GPU_CHECK_DRY="$dry"
export GPU_CHECK_PREBUILT="$prebuilt"
start_s=$SECONDS

# name | limit in seconds at 16 cores | stage it needs ('-': none) | kind | function and arguments.
# Kinds: doctest (a test_cuda file: its summary line is read), check (one line "RESULT: ..." is read).
# Limits are upper bounds for hangs, sized from the 2-core build here and the tests' sizes (docs/cuda.md).
stage_table() {
  cat <<'EOF'
preflight|10|-|check|preflight
configure|20|preflight|check|configure
build|240|configure|check|build
k_norm|8|build|doctest|kernel_file test_cuda_norm.cpp
k_elementwise|8|build|doctest|kernel_file test_cuda_elementwise.cpp
k_embedding_loss|8|build|doctest|kernel_file test_cuda_embedding_loss.cpp
k_gemm|8|build|doctest|kernel_file test_cuda_gemm.cpp
k_attention|8|build|doctest|kernel_file test_cuda_attention.cpp
k_attention_tc|10|build|doctest|kernel_file test_cuda_attention_tc.cpp
k_fp8|10|build|doctest|kernel_file test_cuda_fp8.cpp
k_moe|10|build|doctest|kernel_file test_cuda_moe.cpp
memcheck|45|build|doctest|memcheck
t_model|12|build|doctest|test_file test_cuda_model.cpp
t_device_thread_comm|10|build|doctest|test_file test_cuda_device_thread_communicator.cpp
t_nccl_comm|15|build|doctest|nccl_file
t_nccl_two_ranks|10|build|doctest|nccl_two_ranks
t_trainer|15|build|doctest|test_file test_cuda_trainer.cpp
t_pipeline|15|build|doctest|test_file test_cuda_pipeline.cpp
t_grad_scaler|8|build|doctest|test_file test_cuda_grad_scaler.cpp
t_lora|12|build|doctest|test_file test_cuda_lora.cpp
t_fp16|12|build|doctest|test_file test_cuda_fp16.cpp
accept_small|15|build|check|accept_small
accept_threads2|12|build|check|accept_threads 2
accept_threads4|12|build|check|accept_threads 4
accept_tp2|12|build|check|accept_parallel tp 2
accept_pp2|12|build|check|accept_parallel pp 2
accept_moe_mla|12|build|check|accept_model deepseek-tiny
accept_1b_fsdpx|150|build|check|accept_1b_fsdpx
accept_1b_eager|35|build|check|accept_1b_torch eager
accept_1b_compile|90|build|check|accept_1b_torch compile
perf_table|10|accept_1b_fsdpx|check|perf_table
profile_b|90|accept_1b_fsdpx|check|profile_b
bench|30|build|check|bench
gemm_search|45|build|check|gemm_search
calibrate|240|accept_1b_fsdpx|check|calibrate
EOF
}

# Statuses an earlier call settled: kept on --resume. "not run (call time ...)", "not run (needs ...)" and
# "not run (dry run)" are not settled: those stages run again.
settled() { [[ $1 == ok* || $1 == FAILED* || $1 == TIMEOUT* || $1 == "not run:"* || $1 == "not run (exit 77"* ]]; }
previous_row() { [ -n "$resume" ] && awk -F'\t' -v n="$1" '$1 == n { print; exit }' "$resume"; }
status_of() { awk -F'\t' -v n="$1" '$1 == n { s = $2 } END { print s }' "$rows"; }

write_row() {  # name status seconds limit note: appended at once, then the table is rewritten
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5//$'\t'/ }" >>"$rows"
  {
    echo "# fsdpx GPU check ($(date -u +%Y-%m-%dT%H:%M:%SZ)$([ "$dry" = 1 ] && echo ', DRY RUN: nothing tested'))"
    echo
    echo "| stage | status | seconds | limit s | detail |"
    echo "|---|---|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$rows"
  } >"$md"
}

# doctest's summary "[doctest] test cases: 5 | 4 passed | 1 failed | 0 skipped" -> "4/5 cases passed".
doctest_summary() {
  grep -E '^\[doctest\] test cases:' "$1" | tail -n 1 |
    sed -E 's/.*test cases: *([0-9]+) *\| *([0-9]+) passed *\| *([0-9]+) failed *\| *([0-9]+) skipped.*/\2 \1 \3 \4/'
}

classify() {  # kind rc log -> sets status and detail
  local kind="$1" rc="$2" log="$3" sum passed total failed skipped
  detail="$(grep -E '^(RESULT|NOT RUN): ' "$log" | tail -n 1 | sed -E 's/^(RESULT|NOT RUN): //' | cut -c1-300)"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then status="TIMEOUT"; return; fi
  if [ "$rc" = 77 ]; then status="not run (exit 77: no CUDA device visible)"; return; fi
  if grep -qE '^NOT RUN: ' "$log"; then status="not run: ${detail}"; detail=""; return; fi
  if [ "$kind" = doctest ]; then
    sum="$(doctest_summary "$log")"
    if [ -z "$sum" ]; then
      if [ "$rc" = 0 ]; then status="not run (no doctest summary)"; else status="FAILED (rc $rc, no doctest summary: crashed)"; fi
      return
    fi
    read -r passed total failed skipped <<<"$sum"
    if [ "$total" = 0 ]; then status="not run (no test case matched)"; return; fi
    detail="$passed/$total cases passed, $failed failed, $skipped skipped${detail:+; $detail}"
  fi
  if [ "$rc" = 0 ]; then status="ok"; else status="FAILED (rc $rc)"; fi
}

run_stage() {  # name limit needs kind cmd...
  local name="$1" limit="$2" needs="$3" kind="$4"; shift 4
  local prev log="$work/logs/$name.log" t0=$SECONDS rc=0 status stub_rc_var="GPU_CHECK_STUB_RC_$name"
  local stub_out_var="GPU_CHECK_STUB_OUT_$name"
  prev="$(previous_row "$name")"
  if [ -n "$prev" ] && settled "$(cut -f2 <<<"$prev")" && [[ $name != preflight && $name != configure && $name != build ]]; then
    IFS=$'\t' read -r _ status s l note <<<"$prev"
    write_row "$name" "$status" "$s" "$l" "earlier call${note:+: $note}"; return
  fi
  if [ "$needs" != - ] && [[ $(status_of "$needs") != ok* && $(status_of "$needs") != "not run (dry run)" ]]; then
    write_row "$name" "not run (needs $needs)" 0 "$limit" ""; return
  fi
  local used_s=$((SECONDS - start_s))
  [ "$dry" = 1 ] && used_s=$budget_s  # a dry run charges every stage its whole limit
  if (( used_s + limit > deadline_s )); then
    write_row "$name" "not run (call time: $used_s s used of $deadline_s; resume)" 0 "$limit" ""; return
  fi
  budget_s=$((budget_s + limit))
  echo "=== $name (limit $limit s): $*"
  if [ "$dry" = 1 ] && [ "$name" != preflight ]; then  # the preflight runs here too (it stubs its GPU part)
    { echo "dry run: would run '$*' under timeout $limit"; printf '%b\n' "${!stub_out_var:-}"; } >"$log"
    rc="${!stub_rc_var:-0}"
  else
    timeout -k 5 "$limit" bash "$stages_sh" "$@" >"$log" 2>&1 </dev/null || rc=$?
  fi
  classify "$kind" "$rc" "$log"
  [ "$status" = TIMEOUT ] && status="TIMEOUT after $limit s"
  if [ "$dry" = 1 ]; then  # a stub tested nothing, whatever it printed
    if [ -z "${!stub_rc_var:-}${!stub_out_var:-}" ]; then status="not run (dry run)"; else status="$status (stub)"; fi
  fi
  write_row "$name" "$status" "$((SECONDS - t0))" "$limit" "$detail"
  { echo "===== $name: $status ($((SECONDS - t0)) s, limit $limit s)"
    if [ "$(wc -c <"$log")" -le 120000 ]; then cat "$log"; else head -c 60000 "$log"; echo "[... cut ...]"; tail -c 60000 "$log"; fi
    echo; } >>"$biglog"
  tail -n 5 "$log"; echo "--> $status"
}

budget_s=0
total_s=0
while IFS='|' read -r name limit needs kind cmd; do
  total_s=$((total_s + limit))
  # shellcheck disable=SC2086  # cmd is a function name and its words
  run_stage "$name" "$limit" "$needs" "$kind" $cmd
  # The register-resident attention failed its test: the later stages run the WMMA kernels (attention_tc.h).
  if [ "$name" = k_attention_tc ] && [[ $(status_of k_attention_tc) == FAILED* || $(status_of k_attention_tc) == TIMEOUT* ]]; then
    export FSDPX_TC_ATTENTION=wmma
    echo "=== k_attention_tc did not pass: FSDPX_TC_ATTENTION=wmma for the stages after it"
  fi
done < <(stage_table)
# The acceptance outputs (losses, tokens/s) for the record: one archive, rewritten by each call.
tar -czf "$out/gpu_accept.tar.gz" -C "$work" accept 2>/dev/null || true
echo "=== rows ($md)"
cat "$md"
echo "budget: $total_s s (every stage's limit at 16 cores, build included; this call ran stages worth $budget_s s)"
grep -qE $'\t(FAILED|TIMEOUT)' "$rows" && exit 1
exit 0
