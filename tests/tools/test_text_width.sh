#!/usr/bin/env bash
# tests/tools/test_text_width.sh — the README's examples of plan, estimate, simulate and run (and the demo)
# print no line wider than 120 characters (tools/format.h kTextWidth): long labels and sentences wrap,
# tables put the plan's label under its own column. The README's main job (demo, the llama-tiny plan and
# 200 steps of run) prints under 100 lines in all. Leaves out JSON output, which is for programs.
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

# The README's first command: its main job's output, a person reads it whole (issue 35: under 100 lines
# with the build's; the build prints a handful).
"$FSDPX" run --plan "$tmp/tiny.json" --steps 200 > "$tmp/run200.txt" 2>&1
lines=$(cat "$tmp/demo.txt" "$tmp/plan-tiny.txt" "$tmp/run200.txt" | wc -l)
[ "$lines" -le 90 ] ; check "the README's main job prints $lines lines (<= 90)" $?
falls=$(grep "^step" "$tmp/run200.txt" | grep -o "loss [0-9.]*" | awk 'NR==1{a=$2} {b=$2} END{print (b < a - 1) ? "yes" : "no: " a " -> " b}')
[ "$falls" = yes ] ; check "run --steps 200 shows the falling loss ($falls)" $?
alternatives=$(grep -c "^ *lost: " "$tmp/plan-tiny.txt")
[ "$alternatives" -eq 5 ] ; check "plan shows 5 alternatives, each with why it lost (got $alternatives)" $?
# Alternatives name what differs from the chosen plan: bf16 reduction is not allowed by default, so every plan
# reduces in fp32 and no alternative's row repeats it.
rows=$(grep -E "^ +[2-6] +[0-9]+ +[0-9.]+% " "$tmp/plan-tiny.txt")
[ "$(echo "$rows" | grep -c .)" -eq 5 ] && ! echo "$rows" | grep -q "reduce fp32"
check "alternatives show what differs from the chosen plan, not its whole label" $?
grep -q "^Pareto frontier" "$tmp/plan-tiny.txt" ; [ $? -ne 0 ] ; check "plan leaves the Pareto frontier out by default" $?
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --pareto > "$tmp/pareto.txt" 2>&1
grep -q "^Pareto frontier (throughput vs peak memory): [1-9]" "$tmp/pareto.txt" ; check "plan --pareto lists it" $?
expect_narrow "plan --pareto" "$tmp/pareto.txt"
finish
