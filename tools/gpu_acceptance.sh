#!/usr/bin/env bash
# The done-when checks of the CUDA backend on one GPU (issue #6), run by tools/gpu_check.sh after the
# build and the GPU unit tests; every step goes on even when one fails. Writes a markdown section to
# $2/acceptance.md and leaves the inputs and outputs in $2/acceptance/. Steps:
#  1. correctness: llama-small, 20 steps: CPU fp32 vs CUDA vs PyTorch bf16 from the same weights and
#     batches (safetensors), loss max rel diff <= 2e-2;
#  2. several ranks on one GPU: 2- and 4-rank plans as threads (in-process communicator) and, where NCCL
#     allows it (>= 2.30, NCCL_MULTI_RANK_GPU_ENABLE=1), as processes, vs the 1-rank CUDA run;
#  3. performance: llama3.2-1b at seq 2048, the plan fsdpx chooses for one GPU: measured tokens/s and MFU
#     beside PyTorch eager and torch.compile (tools/torch_reference.py --bench, same model and batch)
#     and beside the simulator's prediction;
#  4. calibration: fsdpx calibrate on the run profile of plan A, then the prediction for plan B
#     (seq 1024) with the calibrated cluster vs plan B's measurement.
# Usage: tools/gpu_acceptance.sh BUILD_DIR OUT_DIR [CLUSTER, default dgx-h100]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fsdpx="$1/fsdpx"
w="$1/acceptance"
md="$2/acceptance.md"
cluster="${3:-dgx-h100}"
mkdir -p "$w"
cmp_py="$root/tools/gpu_acceptance_report.py"
row() { echo "| $1 | $2 | $3 |" >>"$md"; }
run() { echo "+ $*"; "$@"; }

{ echo "## Acceptance (issue #6 done-when), cluster spec $cluster"; echo; echo "| check | result | detail |"
  echo "|---|---|---|"; } >"$md"

# 1. Correctness. The CPU runtime runs fp32/unfused plans (the cpu cluster's), the CUDA runtime bf16/flash2
#    ones: same model, training, optimizer and seed; the weights come from one file.
run "$fsdpx" plan --model llama-small --cluster cpu --world-size 1 --seq 128 --global-batch 8 -o "$w/small_cpu.json"
run "$fsdpx" plan --model llama-small --cluster "$cluster" --world-size 1 --seq 128 --global-batch 8 -o "$w/small1.json"
run "$fsdpx" run --plan "$w/small_cpu.json" --backend cpu --steps 20 --format json \
  --save-init-weights "$w/init.safetensors" --dump-batches "$w/batches.safetensors" >"$w/cpu.json"
run "$fsdpx" run --plan "$w/small1.json" --backend cuda --steps 20 --format json \
  --init-weights "$w/init.safetensors" >"$w/cuda1.json"
run python3 "$root/tools/torch_reference.py" --plan "$w/small1.json" --weights "$w/init.safetensors" \
  --batches "$w/batches.safetensors" --steps 20 --device cuda --dtype bf16 -o "$w/torch_bf16.json"
row "20 steps llama-small: CUDA vs CPU fp32" "$(python3 "$cmp_py" losses "$w/cuda1.json" "$w/cpu.json" 2e-2)" "loss max rel diff, tol 2e-2"
row "20 steps llama-small: CUDA vs PyTorch bf16" "$(python3 "$cmp_py" losses "$w/cuda1.json" "$w/torch_bf16.json" 2e-2)" "same weights and batches"

# 2. Several ranks on one GPU (same global batch: the losses follow the 1-rank run within bf16 noise).
for n in 2 4; do
  run "$fsdpx" plan --model llama-small --cluster "$cluster" --world-size $n --seq 128 --global-batch 8 -o "$w/small$n.json"
  run "$fsdpx" run --plan "$w/small$n.json" --backend cuda --single-process --steps 20 --format json \
    --init-weights "$w/init.safetensors" >"$w/threads$n.json"
  row "$n ranks as threads on one GPU vs 1 rank" "$(python3 "$cmp_py" losses "$w/threads$n.json" "$w/cuda1.json" 2e-2)" "in-process communicator"
  NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=8 timeout 300 "$fsdpx" run --plan "$w/small$n.json" --backend cuda \
    --steps 20 --format json >"$w/nccl$n.json" 2>"$w/nccl$n.err"
  row "$n NCCL processes on one GPU vs threads" "$(python3 "$cmp_py" losses "$w/nccl$n.json" "$w/threads$n.json" 2e-2)" \
    "$(tail -n 1 "$w/nccl$n.err" | tr '|' '/' | cut -c1-160)"
done

# 3. Performance: the plan fsdpx chooses for one GPU, measured, simulated and beside PyTorch.
run "$fsdpx" plan --model llama3.2-1b --cluster "$cluster" --world-size 1 --seq 2048 --global-batch 8 -o "$w/perf.json"
run "$fsdpx" simulate --plan "$w/perf.json" --format json >"$w/perf.sim.json"
run "$fsdpx" run --plan "$w/perf.json" --backend cuda --steps 12 --format json >"$w/perf.run.json"
accum=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['training']; print(t['global_batch']//t['micro_batch'])" "$w/perf.json")
for mode in eager compile; do
  flag=$([ $mode = compile ] && echo --compile)
  run python3 "$root/tools/torch_reference.py" --bench --plan "$w/perf.json" --device cuda --dtype bf16 \
    --accum "$accum" --steps 10 $flag -o "$w/torch_$mode.json"
done
python3 "$cmp_py" perf "$w/perf.json" "$w/perf.run.json" "$w/perf.sim.json" "$w/torch_eager.json" "$w/torch_compile.json" >>"$md"

# 4. Calibration: profile of plan A (a separate run: profiling waits after every op and kernel) ->
#    cluster; plan B predicted with it vs measured without profiling.
run "$fsdpx" run --plan "$w/perf.json" --backend cuda --steps 8 --format json --profile "$w/perf.profile.json" >/dev/null
run "$fsdpx" calibrate --profile "$w/perf.profile.json" -o "$w/calibrated.json"
run "$fsdpx" plan --model llama3.2-1b --cluster "$w/calibrated.json" --world-size 1 --seq 1024 --global-batch 16 -o "$w/planb.json"
run "$fsdpx" simulate --plan "$w/planb.json" --format json >"$w/planb.sim.json"
run "$fsdpx" run --plan "$w/planb.json" --backend cuda --steps 12 --format json >"$w/planb.run.json"
row "calibrated prediction, plan B (seq 1024)" "$(python3 "$cmp_py" predict "$w/planb.run.json" "$w/planb.sim.json" 0.10)" "step time, tol 10%"
cat "$md"
