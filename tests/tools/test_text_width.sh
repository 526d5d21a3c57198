#!/usr/bin/env bash
# tests/tools/test_text_width.sh — the README's examples of plan, estimate, simulate and run (and the demo)
# print no line wider than 120 characters (tools/format.h kTextWidth): long labels and sentences wrap,
# tables put the plan's label under its own column. Leaves out JSON output, which is for programs.
set -u
FSDPX=${1:?path to fsdpx}
source "$(dirname "$0")/cli_check.sh"

widest() {  # file -> the longest line's length
  awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"
}
expect_narrow() {  # name, file
  local w
  w=$(widest "$2")
  [ "$w" -le 120 ] ; check "$1: widest line $w <= 120 characters" $?
  [ "$w" -le 120 ] || awk 'length($0) > 120' "$2" | head -3
}

"$FSDPX" estimate --model llama3.1-70b --cluster dgx-h100 --nodes 16 --tp 8 --seq 8192 --recompute full \
  > "$tmp/estimate.txt" 2>&1
expect_narrow "estimate" "$tmp/estimate.txt"
"$FSDPX" plan --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --global-batch 32 -o "$tmp/plan.json" \
  > "$tmp/plan.txt" 2>&1
expect_narrow "plan" "$tmp/plan.txt"
grep -q "^   1  *[0-9]*  *[0-9.]*%" "$tmp/plan.txt" ; check "plan: the chosen plan is row 1 of the top plans" $?
"$FSDPX" simulate --plan "$tmp/plan.json" > "$tmp/simulate.txt" 2>&1
expect_narrow "simulate" "$tmp/simulate.txt"
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/tiny.json" \
  > "$tmp/plan-tiny.txt" 2>&1
expect_narrow "plan (llama-tiny, CPU)" "$tmp/plan-tiny.txt"
"$FSDPX" run --plan "$tmp/tiny.json" --steps 20 > "$tmp/run.txt" 2>&1
expect_narrow "run" "$tmp/run.txt"
grep -q "^mean after the first step: .* tok/s, .* tok/s per rank, MFU [0-9.]*% of the cluster's fp32 peak" "$tmp/run.txt"
check "run: the summary gives the run's mean tokens/s and MFU" $?
"$FSDPX" demo > "$tmp/demo.txt" 2>&1
expect_narrow "demo" "$tmp/demo.txt"
finish
