#!/usr/bin/env bash
# CLI test of `fsdpx plan`: the CPU request plans and its -o file loads in `fsdpx simulate`; JSON has the
# plan, alternatives and search counts; an impossible request exits 2 naming the least memory needed;
# the same request writes the same plan bytes twice.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"

text=$("$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/a.json")
check "cpu plan exits 0" $?
echo "$text" | grep -Eq "search: [0-9]+ candidates considered, [0-9]+ pruned .* [0-9]+ simulated" ; check "text prints the counts" $?
echo "$text" | grep -q "chosen plan:" ; check "text prints the chosen plan" $?
echo "$text" | grep -q "why it lost" ; check "text prints the top-K table" $?
"$FSDPX" simulate --plan "$tmp/a.json" >/dev/null
check "the written plan loads in fsdpx simulate" $?
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/b.json" >/dev/null
cmp -s "$tmp/a.json" "$tmp/b.json" ; check "same request, same plan bytes" $?

json=$("$FSDPX" plan --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 4096 --global-batch 16 --format json --top 3)
check "json exits 0" $?
for key in plan alternatives pareto search considered pruned simulated lost_because tokens_per_s_per_gpu; do
  echo "$json" | grep -q "\"$key\"" ; check "json has $key" $?
done

err=$("$FSDPX" plan --model llama3.1-405b --cluster dgx-h100 --nodes 1 --seq 8192 --global-batch 8 2>&1 >/dev/null)
status=$?
[ "$status" -eq 2 ] ; check "impossible request exits 2 (got $status)" $?
echo "$err" | grep -q "least any plan needs is [0-9.]* GiB" ; check "names the least memory needed" $?
echo "$err" | grep -q "more GPUs" ; check "suggests more GPUs" $?

"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --objective fastest >/dev/null 2>&1
[ $? -eq 2 ] ; check "unknown objective exits 2" $?

finish
