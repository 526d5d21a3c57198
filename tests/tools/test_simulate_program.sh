#!/usr/bin/env bash
# CLI test of `fsdpx simulate --program`: one role's step program in issue order with its columns; an
# int reshard_after_forward's backward all-gather goes over the reshard group and its release keeps a
# copy, and the gather from that copy depends on the release; the summary names the peak op; a pipelined
# plan's roles pair their sends and receives by rendezvous; bad --role is one line, exit 2.
set -u
FSDPX="$1"
pass=0
fail=0
check() {  # name, command status
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$FSDPX" simulate --plan llama-tiny-cpu-fsdp4 --program)
check "--program exits 0" $?
echo "$out" | head -2 | grep -q "stream .*kind .*name .*unit .*mb .*group .*bytes .*effects .*deps .*time_ms"
check "header names the columns" $?
# Ops are numbered 0, 1, 2, ... in issue order; the first is unit 0's all-gather over dp_shard.
ids=$(echo "$out" | awk 'NR > 2 { print $1 }' | head -5 | tr '\n' ' ')
[ "$ids" = "0 1 2 3 4 " ] ; check "ops in issue order (got $ids)" $?
echo "$out" | awk 'NR == 3' | grep -q "all_gather .*ag.u0.mb0.fwd .* dp_shard\[4\]"
check "first op is unit 0's all-gather over dp_shard" $?
echo "$out" | grep -q " opt " ; check "the optimizer step is listed" $?

# FSDP2's int reshard_after_forward = 2: the backward all-gather runs over the reshard group of 2 ranks.
plans="$(dirname "$0")/../../configs/plans"
sed 's/"reshard_after_forward": true/"reshard_after_forward": 2/' "$plans/llama-tiny-cpu-fsdp4.json" > "$tmp/partial.json"
"$FSDPX" simulate --plan "$tmp/partial.json" --program > "$tmp/partial.txt"
check "--program of a partial reshard plan exits 0" $?
grep -q "ag.u1.mb0.bwd .* reshard\[2\] .*kept/2" "$tmp/partial.txt"
check "backward all-gather over the reshard group, from the kept copy" $?
grep -q "free.u1.mb0 .*release,kept/2" "$tmp/partial.txt"
check "the release keeps a copy over 2 ranks" $?
# The all-gather from the kept copy lists the release that wrote it among its dependencies (issue 26).
release=$(awk '$4 == "free.u1.mb0" { print $1 }' "$tmp/partial.txt")
gather_deps=$(awk '$4 == "ag.u1.mb0.bwd" { print $(NF - 1) }' "$tmp/partial.txt")
echo ",$gather_deps," | grep -q ",$release," ; check "the kept gather depends on op $release (deps $gather_deps)" $?

# `fsdpx simulate` names the op at the peak (the planner's evaluations lower without names; names11).
"$FSDPX" simulate --plan "$tmp/partial.json" | grep -Eq "^Memory at the peak \(during (ag|fwd|bwd|free|rs)\.u?[0-9a-z.]+\)"
check "simulate names the peak op" $?
"$FSDPX" simulate --plan "$tmp/partial.json" --full --format json | grep -Eq '"peak_memory_op": "(ag|fwd|bwd|free|rs)\.'
check "simulate --full --format json names the peak op" $?

"$FSDPX" simulate --plan llama-tiny-cpu-fsdp4 --program --role 3 2> "$tmp/err" >/dev/null
[ $? -eq 2 ] ; check "--role outside the pipeline ranks exits 2" $?
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "--role" "$tmp/err" ; check "one line naming --role" $?
"$FSDPX" simulate --plan llama-tiny-cpu-fsdp4 --role 0 2>/dev/null >/dev/null
[ $? -eq 2 ] ; check "--role without --program exits 2" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
