#!/usr/bin/env bash
# CLI test of mixture-of-experts models (issue 30): `fsdpx estimate --format json` gives the exact total and
# active parameter counts of Mixtral-8x7B, Qwen3-30B-A3B and DeepSeek-V3 from their config.json as published
# (tests/cost_models/test_moe_params.cpp derives them by hand), model-state bytes from the total, and names
# what it leaves out; plan takes Mixtral's kind for fsdpx's CPU backend at tp = cp = pp = 1 with ep > 1 (its
# MoE blocks, executor/model/moe_mlp.h, exchange tokens over the ep group), run trains it at ep 1, 2 and 4 on
# threads and processes to the same losses (at ep 2 with full recompute too), and DeepSeek-V3's kind (deepseek-tiny: latent attention, sigmoid
# grouped routing, a shared expert, a dense leading block; executor/model/mla_attention.h) likewise at ep 1, 2
# and 4 (an ep 2 checkpoint of processes resumes at ep 4), refusing it under tp at /parallelism/tp (exit 2);
# plan takes latent attention with ep > 1 for torchtitan, report varies ep, simulate takes MoE and
# latent-attention plan files, run trains an MoE plan.
set -u
FSDPX="$1"
DATA="$2"
source "$(dirname "$0")/cli_check.sh"

counts() {  # dir, total, active
  local json
  json=$("$FSDPX" estimate --model "$DATA/hf/$1/config.json" --cluster dgx-h100 --nodes 8 --seq 4096 --format json)
  check "$1: estimate exits 0" $?
  [ "$(echo "$json" | jq .total_params)" = "$2" ] ; check "$1: total_params $2" $?
  [ "$(echo "$json" | jq .active_params)" = "$3" ] ; check "$1: active_params $3" $?
}
counts mixtral-8x7b-v0.1 46702792704 12879925248
counts qwen3-30b-a3b 30532122624 3353032704
counts deepseek-v3 671026419200 37552297472

# FSDP2 with fp32 master weights keeps 16 bytes per parameter over dp_shard (cost_models/memory.h): the
# state of all 671B parameters over 1024 GPUs; activations and time are not reported.
json=$("$FSDPX" estimate --model "$DATA/hf/deepseek-v3/config.json" --cluster dgx-h100 --nodes 128 --seq 4096 \
  --format json)
state=$(echo "$json" | jq '.per_gpu_memory_bytes.params + .per_gpu_memory_bytes.grads + .per_gpu_memory_bytes.optimizer')
awk -v s="$state" 'BEGIN { e = 16 * 671026419200 / 1024; exit !(s > e * 0.999999 && s < e * 1.000001) }'
check "DeepSeek-V3 state bytes are 16 x total / 1024 (got $state)" $?
[ "$(echo "$json" | jq '.per_gpu_memory_bytes | has("activations")')" = "false" ] ; check "no activations reported" $?
[ "$(echo "$json" | jq 'has("step_time_lower_bound_s")')" = "false" ] ; check "no step time reported" $?
echo "$json" | jq -r .not_modelled | grep -q "issue 30" ; check "not_modelled names issue 30" $?
flops=$(echo "$json" | jq .model_flops_per_token)
# 6 x (active - embedding table) + 6 L H (d_qk + d_v) T (docs/models.md): 61 layers, 128 heads, 192 + 128.
awk -v f="$flops" 'BEGIN { e = 6 * (37552297472 - 129280 * 7168) + 6 * 61 * 128 * (192 + 128) * 4096
  exit !(f > e * 0.999999 && f < e * 1.000001) }' ; check "FLOPs/token 6 N_active + attention (got $flops)" $?
text=$("$FSDPX" estimate --model mixtral-tiny --cluster cpu --world-size 2 --seq 64)
check "text estimate exits 0" $?
echo "$text" | grep -q "active per token" ; check "text names the active parameters" $?
echo "$text" | grep -q "Not estimated: " ; check "text names what it leaves out" $?

refused() {  # name, expected message part, command...
  local name="$1" part="$2" err
  shift 2
  err=$("$FSDPX" "$@" 2>&1 >/dev/null)
  [ $? -eq 2 ] ; check "$name exits 2" $?
  echo "$err" | grep -q -- "$part" ; check "$name says '$part' ($err)" $?
}
refused "estimate --tp 2" "--tp: tensor parallelism of mixture-of-experts" \
  estimate --model mixtral-tiny --cluster cpu --world-size 2 --tp 2 --seq 64
"$FSDPX" plan --model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/mx.json" >/dev/null
check "plan mixtral-tiny for fsdpx on the CPU exits 0" $?
[ "$(jq -c '[.parallelism.tp, .parallelism.cp, .parallelism.pp]' "$tmp/mx.json")" = "[1,1,1]" ]
check "the CPU plan of mixtral-tiny keeps tp = cp = pp = 1" $?
# The CPU row runs MoE blocks at tp = cp = pp = 1 (moe_gaps): a fixed --tp 2 names itself, and a batch no
# shape of the row splits gets the batch-split line, whose suggested plan keeps to the row (it once
# suggested "fsdp 1 cp 4" at global batch 7, the least memory of a plan the CPU refuses).
refused "plan mixtral-tiny at --tp 2 for fsdpx on the CPU" "--tp: target fsdpx does not run model mixtral-tiny" \
  plan --model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --tp 2
err=$("$FSDPX" plan --model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 6 2>&1 >/dev/null)
echo "$err" | grep -q "cannot be split evenly" && ! echo "$err" | grep -q -E " cp [2-9]"
check "mixtral-tiny at global batch 6 on 4 CPU ranks: the batch split, no cp plan suggested ($err)" $?
# The fsdpx target plans ep > 1 on the CPU (whether it wins depends on the costs): report's ep points have plans.
plans=$("$FSDPX" report --model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --vary ep=1,2,4 \
  --format json 2>/dev/null | jq -r '.sweeps[0].rows[] | "ep=\(.point.ep): \(.plan // .error)"')
for e in 2 4; do
  echo "$plans" | grep -q "^ep=$e: .*, ep $e " ; check "the CPU target plans mixtral-tiny at ep $e ($plans)" $?
done
# The CPU backend trains it at ep 1, 2 and 4, its ranks threads or processes (TCP), to the same losses within
# 1e-5 over 20 steps (executor/model/moe_exchange.h, executor/cpu_backend/expert_shards.h).
for e in 1 2 4; do
  jq ".parallelism.ep = $e" "$tmp/mx.json" > "$tmp/mx_ep$e.json"
  "$FSDPX" run --plan "$tmp/mx_ep$e.json" --steps 20 --format json 2>/dev/null | jq -c '[.steps[].loss]' > "$tmp/l_t$e.json"
  check "run mixtral-tiny at ep $e on threads exits 0" "${PIPESTATUS[1]}"
  "$FSDPX" run --plan "$tmp/mx_ep$e.json" --steps 20 --processes --format json 2>/dev/null | jq -c '[.steps[].loss]' \
    > "$tmp/l_p$e.json"
  check "run mixtral-tiny at ep $e in processes exits 0" "${PIPESTATUS[1]}"
done
for f in t2 t4 p1 p2 p4; do
  jq -n --slurpfile a "$tmp/l_t1.json" --slurpfile b "$tmp/l_$f.json" \
    '($a[0] | length) == 20 and ([range(20)] | all(. as $i | (($a[0][$i] - $b[0][$i]) | fabs) <= 1e-5))' | grep -q true
  check "mixtral-tiny losses ($f) within 1e-5 of ep 1 on threads over 20 steps" $?
done
# Full recompute at ep 2 in processes: each block's backward re-runs its forward's dispatch and combine over TCP,
# as the step program lists them (torchtitan's full AC), to the same losses.
jq '.recompute = "full"' "$tmp/mx_ep2.json" > "$tmp/mx_ep2_full.json"
"$FSDPX" run --plan "$tmp/mx_ep2_full.json" --steps 20 --processes --format json 2>/dev/null | jq -c '[.steps[].loss]' \
  > "$tmp/l_p2full.json"
check "run mixtral-tiny at ep 2 with full recompute in processes exits 0" "${PIPESTATUS[1]}"
jq -n --slurpfile a "$tmp/l_t1.json" --slurpfile b "$tmp/l_p2full.json" \
  '($a[0] | length) == 20 and ([range(20)] | all(. as $i | (($a[0][$i] - $b[0][$i]) | fabs) <= 1e-5))' | grep -q true
check "mixtral-tiny losses at ep 2 with full recompute in processes within 1e-5 of ep 1 on threads" $?
"$FSDPX" plan --model deepseek-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 -o "$tmp/ds.json" >/dev/null
check "plan deepseek-tiny for fsdpx on the CPU exits 0" $?
[ "$(jq -c '[.parallelism.tp, .parallelism.cp, .parallelism.pp]' "$tmp/ds.json")" = "[1,1,1]" ]
check "the CPU plan of deepseek-tiny keeps tp = cp = pp = 1" $?
for e in 1 2 4; do
  jq ".parallelism.ep = $e" "$tmp/ds.json" > "$tmp/ds_ep$e.json"
  "$FSDPX" run --plan "$tmp/ds_ep$e.json" --steps 20 --format json 2>/dev/null | jq -c '[.steps[].loss]' > "$tmp/d_t$e.json"
  check "run deepseek-tiny at ep $e on threads exits 0" "${PIPESTATUS[1]}"
done
for e in 2 4; do
  "$FSDPX" run --plan "$tmp/ds_ep$e.json" --steps 20 --processes --format json 2>/dev/null | jq -c '[.steps[].loss]' \
    > "$tmp/d_p$e.json"
  check "run deepseek-tiny at ep $e in processes exits 0" "${PIPESTATUS[1]}"
done
# Checkpoints across ep with every rank a process: saved at ep 2 after 10 steps (Trainer::local_state gathers
# the expert slices over the processes), resumed at ep 4, steps 11-20 are the uninterrupted run's.
"$FSDPX" run --plan "$tmp/ds_ep2.json" --steps 10 --processes --checkpoint-dir "$tmp/ds_ck" >/dev/null 2>&1
check "deepseek-tiny at ep 2 in processes saves a checkpoint" $?
"$FSDPX" run --plan "$tmp/ds_ep4.json" --steps 20 --processes --checkpoint-dir "$tmp/ds_ck" --resume --format json \
  2>/dev/null | jq -c '[.steps[].loss]' > "$tmp/d_r4.json"
check "deepseek-tiny at ep 4 in processes resumes the ep 2 checkpoint" "${PIPESTATUS[0]}"
jq -n --slurpfile a "$tmp/d_t1.json" --slurpfile b "$tmp/d_r4.json" \
  '($b[0] | length) == 10 and ([range(10)] | all(. as $i | (($a[0][$i + 10] - $b[0][$i]) | fabs) <= 1e-5))' | grep -q true
check "resumed at ep 4: steps 11-20 within 1e-5 of the uninterrupted ep 1 run ($(cat "$tmp/d_r4.json"))" $?
for f in t2 t4 p2 p4; do
  jq -n --slurpfile a "$tmp/d_t1.json" --slurpfile b "$tmp/d_$f.json" \
    '($a[0] | length) == 20 and ([range(20)] | all(. as $i | (($a[0][$i] - $b[0][$i]) | fabs) <= 1e-5))' | grep -q true
  check "deepseek-tiny losses ($f) within 1e-5 of ep 1 on threads over 20 steps" $?
done
jq '.parallelism.tp = 2 | .parallelism.dp_shard = 2' "$tmp/ds.json" > "$tmp/ds_tp2.json"
refused "run deepseek-tiny at tp 2" "/parallelism/tp" run --plan "$tmp/ds_tp2.json" --steps 1

# torchtitan runs expert parallelism (planner/ep_degrees.h): DeepSeek-V3 on 1024 H100s is planned with ep > 1,
# and the TOML job config carries expert_parallel_degree. The pipeline and tp degrees are fixed to keep the test
# short: the full search of this request takes minutes today (issue 30 asks well under 10 s; docs/performance.md).
"$FSDPX" plan --model "$DATA/hf/deepseek-v3/config.json" --cluster dgx-h100 --nodes 128 --seq 4096 \
  --global-batch 4096 --target torchtitan@0.2.2 --pp 16 --tp 2 -o "$tmp/v3.json" > "$tmp/v3.txt" 2>&1
check "plan DeepSeek-V3 for torchtitan exits 0" $?
# Shapes that differ only in ep differ in their pipeline path (the experts' grouped GEMMs per rank): the planner
# once shared one path between them and aborted on Mixtral-8x7B ("shape bound above its speed limit").
"$FSDPX" plan --model "$DATA/hf/mixtral-8x7b-v0.1/config.json" --cluster dgx-h100 --nodes 2 --seq 4096 \
  --global-batch 32 --target torchtitan@0.2.2 -o "$tmp/mx8x7.json" > /dev/null 2>&1
check "plan Mixtral-8x7B on 2 dgx-h100 nodes for torchtitan exits 0" $?
refused "Mixtral-8x7B on one node" "no plan fits" plan --model "$DATA/hf/mixtral-8x7b-v0.1/config.json" \
  --cluster dgx-h100 --nodes 1 --seq 4096 --global-batch 32 --target torchtitan@0.2.2
ep=$(jq .parallelism.ep "$tmp/v3.json")
[ "$ep" -gt 1 ] ; check "the DeepSeek-V3 plan has ep > 1 (ep $ep)" $?
"$FSDPX" export --plan "$tmp/v3.json" -o "$tmp/v3.toml" >/dev/null 2>&1
grep -q "^expert_parallel_degree = $ep$" "$tmp/v3.toml" ; check "the job config says expert_parallel_degree = $ep" $?
# The default target (fsdpx's executor, CUDA) plans it too now that the CUDA row runs ep > 1 (issue 30's literal
# request, unconstrained: 3.7 s on this 2-core VM, 2026-11-30).
"$FSDPX" plan --model "$DATA/hf/deepseek-v3/config.json" --cluster dgx-h100 --nodes 128 --seq 4096 \
  --global-batch 4096 -o "$tmp/v3_fsdpx.json" > /dev/null 2>&1
check "plan DeepSeek-V3 for the fsdpx target exits 0" $?
ep=$(jq .parallelism.ep "$tmp/v3_fsdpx.json")
[ "$ep" -gt 1 ] ; check "the fsdpx target's DeepSeek-V3 plan has ep > 1 (ep $ep)" $?

# report varies ep: a re-simulated plan (--plan) and a re-planned request (--model) at ep 1, 2 and 4. At ep 2 each
# expert is FSDP-sharded over its own group of 2 ranks (GroupKind efsdp): its reduce-scatter input is allocated
# when the experts' reduce-scatter starts, which the simulator once got wrong ("transient bytes below zero").
"$FSDPX" plan --model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --pp 1 \
  --target torchtitan@0.2.2 -o "$tmp/mx.json" >/dev/null
check "plan mixtral-tiny for torchtitan exits 0" $?
for mode in plan model; do
  if [ $mode = plan ]; then args=(--plan "$tmp/mx.json"); else
    args=(--model mixtral-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --target torchtitan@0.2.2); fi
  "$FSDPX" report "${args[@]}" --vary ep=1,2,4 --format json > "$tmp/rep_$mode.json"
  check "report --$mode --vary ep=1,2,4 exits 0" $?
  plans=$(jq -r '.sweeps[0].rows[] | "ep=\(.point.ep): \(.plan // .error)"' "$tmp/rep_$mode.json")
  for ep in 2 4; do
    echo "$plans" | grep -q "^ep=$ep: .*, ep $ep " ; check "report --$mode: the point ep=$ep has a plan with ep $ep" $?
  done
  echo "$plans" | grep "^ep=1: " | grep -qv ", ep " ; check "report --$mode: the point ep=1 has a plan without ep" $?
done
row_error() {  # name, expected message part, report arguments...
  local name="$1" part="$2"
  shift 2
  "$FSDPX" report "$@" --format json > "$tmp/row.json" ; check "$name exits 0" $?
  jq -r '.sweeps[0].rows[0].error // ""' "$tmp/row.json" | grep -q -- "$part" ; check "$name: its row says '$part'" $?
}
row_error "report a dense model at ep 2" "needs a mixture-of-experts model" \
  --model llama-tiny --cluster cpu --world-size 2 --seq 64 --global-batch 4 --vary ep=2

# A plan file whose model is an MoE model: simulate takes it (program/moe_block.h), run trains it; a
# latent-attention model planned for torchtitan is simulated.
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 2 --seq 64 --global-batch 4 -o "$tmp/p.json" >/dev/null
check "dense plan exits 0" $?
jq --slurpfile m "$(dirname "$0")/../../configs/models/mixtral-tiny.json" '.model = ($m[0] | del(.source))' \
  "$tmp/p.json" > "$tmp/moe.json"
"$FSDPX" simulate --plan "$tmp/moe.json" --format json > "$tmp/sim.json"
check "simulate an MoE plan exits 0" $?
[ "$(jq '.step_time_s > 0' "$tmp/sim.json")" = "true" ] ; check "simulated MoE step time > 0" $?
"$FSDPX" run --plan "$tmp/moe.json" --steps 2 --format json > "$tmp/moe_run.json"
check "run an MoE plan exits 0" $?
[ "$(jq '[.steps[].loss | . > 0 and . < 10] | all' "$tmp/moe_run.json")" = "true" ] ; check "MoE losses finite" $?
"$FSDPX" plan --model deepseek-tiny --cluster cpu --world-size 2 --seq 64 --global-batch 4 --target torchtitan@0.2.2 \
  -o "$tmp/mla.json" >/dev/null
check "plan deepseek-tiny (latent attention, MoE) for torchtitan exits 0" $?
"$FSDPX" simulate --plan "$tmp/mla.json" --format json > "$tmp/mla_sim.json"
check "simulate a latent-attention plan exits 0 (cost_models/compute_mla.cpp)" $?
[ "$(jq '.step_time_s > 0' "$tmp/mla_sim.json")" = "true" ] ; check "simulated latent-attention step time > 0" $?

finish
