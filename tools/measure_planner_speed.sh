#!/bin/bash
# tools/measure_planner_speed.sh — issue 36's done-when measured in one run: start-up, the 530B simulate, the
# 405B requests and the two growth curves (CPU time). Usage: tools/measure_planner_speed.sh BUILD_DIR (from the repo root).
B=${1:-build}; F=$B/fsdpx
cpu() { # best of N user+sys seconds of a command
  local n=$1; shift; local best=999
  for i in $(seq $n); do
    /usr/bin/time -f '%U %S' -o /tmp/m36.t "$@" >/dev/null 2>&1; t=$(tail -1 /tmp/m36.t | awk '{print $1+$2}')
    best=$(awk -v a=$best -v b=$t 'BEGIN{print (b<a)?b:a}')
  done; echo $best; }
echo "date $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) $(nproc) cores; uptime: $(uptime)"
P405="--model llama3.1-405b --cluster dgx-h100 --seq 8192 --format json"
echo "## start-up (perf stat -r 20 task-clock, ms)"
for c in "--version" "estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --micro-batch 1" \
         "simulate --plan configs/plans/llama3.1-8b-dgx-h100-fsdp8.json" \
         "simulate --plan tests/data/plans/gpt-530b-a100x2240-pp35-1f1b.json"; do
  ms=$(perf stat -r 20 -e task-clock -x, $F $c 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
  echo "$c: $ms ms"; done
echo "## 530B full vs extrapolated step"
$F simulate --plan tests/data/plans/gpt-530b-a100x2240-pp35-1f1b.json | grep "step time"
$F simulate --full --plan tests/data/plans/gpt-530b-a100x2240-pp35-1f1b.json | grep "step time"
echo "## 405B B 2048 / 16384 (best of 3, s)"
for t in fsdpx torchtitan@0.2.2; do
  echo "2048 nodes B2048 $t: $(cpu 3 $F plan $P405 --nodes 2048 --global-batch 2048 --target $t)"
done
echo "2048 nodes B16384 fsdpx: $(cpu 3 $F plan $P405 --nodes 2048 --global-batch 16384)"
echo "## 405B over nodes, B 2048 (best of 2, s)"
for n in 8 32 128 512 2048; do for t in fsdpx torchtitan@0.2.2; do
  echo "nodes $n $t: $(cpu 2 $F plan $P405 --nodes $n --global-batch 2048 --target $t)"; done; done
echo "## 70B on 64 nodes over global batch (best of 2, s)"
for b in 512 4096 32768 262144; do for t in fsdpx torchtitan@0.2.2; do
  echo "B $b $t: $(cpu 2 $F plan --model llama3.1-70b --cluster dgx-h100 --nodes 64 --seq 8192 --global-batch $b --format json --target $t)"; done; done
echo "uptime after: $(uptime)"
