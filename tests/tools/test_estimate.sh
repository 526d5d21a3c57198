#!/usr/bin/env bash
# CLI test of `fsdpx estimate` and `fsdpx demo`: JSON has the documented keys with sane values, text
# output has its tables, and a Hugging Face config.json path works as --model.
set -u
FSDPX="$1"
pass=0
fail=0
check() {  # name, command status
  if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}

json=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --format json)
check "estimate json exits 0" $?
for key in total_params per_gpu_memory_bytes params grads optimizer activations transient other total \
           model_flops_per_token step_time_lower_bound_s; do
  echo "$json" | grep -q "\"$key\"" ; check "json has $key" $?
done
# 8.03B parameters (Llama 3.1 8B), printed as an integer.
echo "$json" | grep -Eq '"total_params": 80[0-9]{8}' ; check "total_params is 8.0xB" $?
# Step time lower bound is a positive number in seconds.
echo "$json" | grep -Eq '"step_time_lower_bound_s": [0-9]+\.[0-9]+' ; check "step time is positive" $?

text=$("$FSDPX" demo)
check "demo exits 0" $?
echo "$text" | grep -q "memory .* per GPU (fits" ; check "demo prints the analytic memory against the GPU's" $?
echo "$text" | grep -q "step time >=" ; check "demo prints the step-time bound" $?
echo "$text" | grep -q "predicted for the costs of torchtitan in eager mode" ; check "demo names the stack it assumes" $?
# torchtitan measures 33% MFU eager and 39% compiled for Llama-3.1-8B on these hosts (pytorch/torchtitan
# docs/performance.md, Table 1).
mfu=$(echo "$text" | sed -n 's/.*tokens\/s\/GPU, MFU \([0-9.]*\)%.*/\1/p' | head -1)
awk -v m="$mfu" 'BEGIN { exit !(m >= 33 && m <= 39) }' ; check "demo's chosen plan predicts 33-39% MFU (got $mfu)" $?

"$FSDPX" estimate --model "$(dirname "$0")/../data/hf/llama-3.1-8b/config.json" --cluster dgx-a100-80gb \
  --world-size 16 --tp 2 --recompute full >/dev/null
check "Hugging Face config.json as --model" $?

# fp8 (issue 33): faster than bf16, the fp8 all-gather's saving reported; refused without an fp8 peak.
bf16_tps=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --format json |
  sed -n 's/.*"tokens_per_s_per_gpu_upper_bound": \([0-9.]*\).*/\1/p')
fp8=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --seq 8192 --fp8 tensorwise --fp8-all-gather \
  --format json)
check "estimate --fp8 exits 0" $?
fp8_tps=$(echo "$fp8" | sed -n 's/.*"tokens_per_s_per_gpu_upper_bound": \([0-9.]*\).*/\1/p')
awk -v a="$fp8_tps" -v b="$bf16_tps" 'BEGIN { exit !(a > b) }' ; check "fp8 bound above bf16's ($fp8_tps vs $bf16_tps)" $?
echo "$fp8" | grep -Eq '"fp8_all_gather_saved_s": [0-9.e-]+' ; check "json has fp8_all_gather_saved_s" $?
text=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --fp8 tensorwise --fp8-all-gather)
echo "$text" | grep -q "saved by fp8 all-gather" ; check "text reports the fp8 all-gather's saving" $?
text=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --fp8 tensorwise)
! echo "$text" | grep -q "saved by fp8 all-gather" ; check "no saving reported without --fp8-all-gather" $?
err=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-a100-80gb --nodes 1 --fp8 tensorwise 2>&1)
[ $? -eq 2 ] ; check "--fp8 on A100 exits 2" $?
echo "$err" | grep -q -- "--fp8: GPU" ; check "--fp8 on A100 names the flag" $?
err=$("$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --fp8 rowwise --fp8-all-gather 2>&1)
[ $? -eq 2 ] ; check "rowwise with fp8 all-gather exits 2" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
