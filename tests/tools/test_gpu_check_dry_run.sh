#!/usr/bin/env bash
# tools/gpu_check.sh --dry-run on a machine without a GPU: the whole control flow with the GPU steps
# stubbed. Checks that every stage writes its row, that the budget (every stage's limit, build included)
# is printed and that, charged at every limit, the tests and the small-model acceptance start inside the
# call's deadline (later stages read "not run (call time ...)" for a resumed call), that nothing untested reads "ok", that exit 77, a timeout, a "NOT RUN:" line and a
# doctest run of zero cases read "not run" or "TIMEOUT", that a failed build leaves its dependants
# "not run (needs build)", that --resume keeps an earlier call's settled rows and runs the rest, and
# that the acceptance's loss comparison fails on NaN.
# Usage: test_gpu_check_dry_run.sh REPO_ROOT
set -u
ROOT="$1"
source "$(dirname "$0")/cli_check.sh"
GC="$ROOT/tools/gpu_check.sh"
stages=$(grep -cE '^[a-z0-9_]+\|[0-9]+\|' "$GC")
row() { awk -F'\t' -v n="$2" '$1 == n { print $2 }' "$1/gpu_rows.tsv"; }
detail() { awk -F'\t' -v n="$2" '$1 == n { print $5 }' "$1/gpu_rows.tsv"; }

# 1. Plain dry run.
OUT="$tmp/a" bash "$GC" --dry-run --build "$tmp/build" >"$tmp/a.txt" 2>&1
check "plain dry run exits 0" $?
check "one row per stage ($stages)" $([ "$(wc -l <"$tmp/a/gpu_rows.tsv")" -eq "$stages" ]; echo $?)
check "no dry-run row reads ok" $(! cut -f2 "$tmp/a/gpu_rows.tsv" | grep -q '^ok'; echo $?)
budget=$(sed -nE 's/^budget: ([0-9]+) s.*/\1/p' "$tmp/a.txt")
echo "budget: ${budget:-none} s"
check "budget printed" $([ -n "$budget" ]; echo $?)
check "worst case: the tests and accept_small fit the deadline" \
  $([ "$(row "$tmp/a" accept_small)" = "not run (dry run)" ] && [ "$(row "$tmp/a" t_fp16)" = "not run (dry run)" ]; echo $?)
check "worst case: the benchmark is left to a resumed call" $([[ $(row "$tmp/a" bench) == "not run (call time"* ]]; echo $?)
check "results table written" $(grep -q '| k_gemm | not run (dry run) |' "$tmp/a/gpu_results.md"; echo $?)

# 2. Stubbed outcomes are classified honestly.
ok_sum='[doctest] test cases: 3 | 3 passed | 0 failed | 0 skipped'
OUT="$tmp/b" GPU_CHECK_STUB_OUT_k_norm="$ok_sum" \
  GPU_CHECK_STUB_RC_k_gemm=1 GPU_CHECK_STUB_OUT_k_gemm='[doctest] test cases: 4 | 3 passed | 1 failed | 0 skipped' \
  GPU_CHECK_STUB_RC_t_model=77 GPU_CHECK_STUB_RC_memcheck=124 GPU_CHECK_STUB_RC_k_attention=134 \
  GPU_CHECK_STUB_OUT_t_nccl_two_ranks="NOT RUN: two ranks on one GPU: NCCL 2.28.3\n$ok_sum" \
  GPU_CHECK_STUB_OUT_t_lora='[doctest] test cases: 0 | 0 passed | 0 failed | 0 skipped' \
  bash "$GC" --dry-run --build "$tmp/build" >"$tmp/b.txt" 2>&1
check "a failed stage makes the call exit 1" $([ $? -eq 1 ]; echo $?)
check "passing stub: ok with its case count" \
  $([ "$(row "$tmp/b" k_norm)" = "ok (stub)" ] && [[ $(detail "$tmp/b" k_norm) == "3/3 cases passed"* ]]; echo $?)
check "failing cases: FAILED" $([[ $(row "$tmp/b" k_gemm) == "FAILED (rc 1)"* ]]; echo $?)
check "exit 77: not run" $([[ $(row "$tmp/b" t_model) == "not run (exit 77"* ]]; echo $?)
check "timeout: TIMEOUT after its limit" $([[ $(row "$tmp/b" memcheck) == "TIMEOUT after 45 s"* ]]; echo $?)
check "crash without a summary: FAILED" $([[ $(row "$tmp/b" k_attention) == "FAILED (rc 134, no doctest summary"* ]]; echo $?)
check "NOT RUN line: not run, even with a passing summary" \
  $([[ $(row "$tmp/b" t_nccl_two_ranks) == "not run: two ranks on one GPU: NCCL 2.28.3"* ]]; echo $?)
check "zero cases: not run" $([[ $(row "$tmp/b" t_lora) == "not run (no test case matched)"* ]]; echo $?)

# 3. A failed build: everything after it is "not run (needs build)".
OUT="$tmp/c" GPU_CHECK_STUB_RC_build=2 bash "$GC" --dry-run --build "$tmp/build" >"$tmp/c.txt" 2>&1
check "failed build exits 1" $([ $? -eq 1 ]; echo $?)
check "dependants of the build: not run (needs build, or a stage that needs it)" \
  $([ "$(cut -f2 "$tmp/c/gpu_rows.tsv" | grep -c '^not run (needs build)$')" -ge $((stages - 6)) ] &&
   [ "$(cut -f2 "$tmp/c/gpu_rows.tsv" | grep -c '^not run (needs ')" -eq $((stages - 3)) ]; echo $?)

# 4. Resume: settled rows of call b are kept, the rest runs; a short deadline leaves the tail to a third call.
OUT="$tmp/d" bash "$GC" --dry-run --build "$tmp/build" --resume "$tmp/b/gpu_rows.tsv" --deadline 300 >"$tmp/d.txt" 2>&1
check "resumed: the earlier FAILED row is kept" $([[ $(row "$tmp/d" k_gemm) == "FAILED (rc 1)"* ]] &&
  [[ $(detail "$tmp/d" k_gemm) == "earlier call"* ]]; echo $?)
check "resumed: unsettled rows run again" $([ "$(row "$tmp/d" k_elementwise)" = "not run (dry run)" ]; echo $?)
check "deadline: the tail reads not run (call time)" $([[ $(row "$tmp/d" accept_1b_compile) == "not run (call time"* ]]; echo $?)
OUT="$tmp/e" bash "$GC" --dry-run --build "$tmp/build" --resume "$tmp/d/gpu_rows.tsv" --deadline 5000 >"$tmp/e.txt" 2>&1
check "second resume runs what the deadline left" $([ "$(row "$tmp/e" accept_1b_compile)" = "not run (dry run)" ] &&
  [[ $(row "$tmp/e" t_model) == "not run (exit 77"* ]]; echo $?)

# 5. The acceptance comparison is NaN-safe: a NaN or null loss after good ones fails (max() drops NaN).
REPORT="$ROOT/tools/gpu_acceptance_report.py"
echo '{"steps": [{"step": 1, "loss": 5.0}, {"step": 2, "loss": 4.0}]}' >"$tmp/ref.json"
echo '{"steps": [{"step": 1, "loss": 5.001}, {"step": 2, "loss": 4.001}]}' >"$tmp/good.json"
echo '{"steps": [{"step": 1, "loss": 5.001}, {"step": 2, "loss": NaN}]}' >"$tmp/nan.json"
echo '{"steps": [{"step": 1, "loss": 5.001}, {"step": 2, "loss": null}]}' >"$tmp/null.json"
check "close losses pass" $([[ $(python3 "$REPORT" losses "$tmp/good.json" "$tmp/ref.json" 2e-2) == pass* ]]; echo $?)
check "a NaN loss fails" $([[ $(python3 "$REPORT" losses "$tmp/nan.json" "$tmp/ref.json" 2e-2) == FAIL* ]]; echo $?)
check "a null loss fails" $([[ $(python3 "$REPORT" losses "$tmp/null.json" "$tmp/ref.json" 2e-2) == FAIL* ]]; echo $?)

# 6. Bad arguments.
bash "$GC" --frobnicate >/dev/null 2>&1
check "unknown argument: exit 2" $([ $? -eq 2 ]; echo $?)
bash "$GC" --dry-run --resume "$tmp/none.tsv" >/dev/null 2>&1
check "missing resume file: exit 2" $([ $? -eq 2 ]; echo $?)
bash "$GC" --dry-run --prebuilt "$tmp/none" >/dev/null 2>&1
check "prebuilt folder without test_cuda: exit 2" $([ $? -eq 2 ]; echo $?)
finish
