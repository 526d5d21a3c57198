#!/usr/bin/env bash
# CLI test of tensor and context parallelism on the CPU backend: `fsdpx plan --cluster cpu` chooses tp
# or cp when the global batch has fewer sequences than ranks (4 and 8 ranks), and `fsdpx run` runs the
# chosen plans; across processes (--processes, TCP communicator) tp 2, tp 2 x dp_shard 2,
# cp 2 x dp_shard 2 and tp 2 x cp 2 give the 1-rank losses of the same model, data and seed within 1e-5
# relative over 30 steps (llama-tiny with GQA, gpt-tiny) and the threads runs' losses bit for bit; their
# checkpoints and saved weights are the threads run's and resume; and `fsdpx calibrate` fits the
# intra-node fabric to a tp run's profiled collectives.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"
losses() { python3 -c "import json,sys; print([s['loss'] for s in json.load(open(sys.argv[1]))['steps']])" "$1"; }
degree() { python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['parallelism']; print(p['tp'] * p['cp'])" "$1"; }

# The planner's choice: 4 ranks with 2 sequences, 8 ranks with 2 sequences.
for w in 4 8; do
  "$FSDPX" plan --model llama-tiny --cluster cpu --world-size $w --seq 64 --global-batch 2 -o "$tmp/chosen$w.json" >"$tmp/plan$w.txt"
  check "plan for $w ranks" $?
  [ "$(degree "$tmp/chosen$w.json")" -gt 1 ]; status=$?; check "the $w-rank plan uses tp or cp: $(sed -n 2p "$tmp/plan$w.txt")" $status
  "$FSDPX" run --plan "$tmp/chosen$w.json" --steps 3 --format json >"$tmp/chosen$w.out"
  status=$?  # before the message's command substitution sets $?
  check "fsdpx run runs the chosen $w-rank plan: $(losses "$tmp/chosen$w.out")" $status
done

# Hand-made shapes from each model's 1-rank plan: global batch 4, micro-batch 1, seq 32, 30 steps.
shape() {  # out tp cp dp_shard
  python3 - "$tmp/one.json" "$1" "$2" "$3" "$4" <<'PY'
import json, sys
src, out, tp, cp, dp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p = json.load(open(src))
p["parallelism"].update(tp=tp, cp=cp, dp_shard=dp, sequence_parallel=tp > 1)
p["cluster"]["gpus_per_node"] = tp * cp * dp
p["training"].update(micro_batch=1, global_batch=4)
p.pop("predicted", None)
json.dump(p, open(out, "w"))
PY
}
for model in llama-tiny gpt-tiny; do
  "$FSDPX" plan --model $model --cluster cpu --world-size 1 --seq 32 --global-batch 4 -o "$tmp/one.json" >/dev/null
  check "$model: 1-rank plan" $?
  shape "$tmp/s1.json" 1 1 1
  "$FSDPX" run --plan "$tmp/s1.json" --steps 30 --format json >"$tmp/s1.out"; check "$model: 1 rank, 30 steps" $?
  for s in "2 1 1" "2 1 2" "1 2 2" "2 2 1"; do
    set -- $s
    name="$model tp $1 x cp $2 x dp_shard $3"
    shape "$tmp/s.json" "$1" "$2" "$3"
    # One kernel thread per rank process, as torchrun's OMP_NUM_THREADS=1 (fsdpx's results do not
    # depend on the count).
    OMP_NUM_THREADS=1 timeout 240 "$FSDPX" run --plan "$tmp/s.json" --steps 30 --format json --processes >"$tmp/p.out"
    check "$name as processes" $?
    diff=$(python3 - "$tmp/s1.out" "$tmp/p.out" <<'PY'
import json, sys
a = [s["loss"] for s in json.load(open(sys.argv[1]))["steps"]]
b = [s["loss"] for s in json.load(open(sys.argv[2]))["steps"]]
print(max(abs(x - y) / abs(x) for x, y in zip(a, b)) if len(a) == len(b) == 30 else 1)
PY
)
    echo "$name as processes, 30 steps: loss max rel diff to 1 rank $diff"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-5 else 1)" "$diff"
    check "$name (processes) gives the 1-rank losses over 30 steps: max rel diff $diff" $?
    # The same shape as threads: bit-identical losses (the threads' final parameters match the 1-rank
    # run's within 1e-5 in test_executor's trainer tests).
    "$FSDPX" run --plan "$tmp/s.json" --steps 30 --format json >"$tmp/t.out"
    [ "$(losses "$tmp/t.out")" = "$(losses "$tmp/p.out")" ]; check "$name: processes and threads bit-identical" $?
  done
done

# Per-process checkpoints under tp 2 x cp 2 (gpt-tiny, the last shape above): 4 processes write the threads
# run's checkpoint and --save-weights files byte for byte and the same parameter hash (Trainer::local_state
# gathers the slices over the processes), and resumed as processes they give the uninterrupted threads
# run's losses bit for bit.
"$FSDPX" run --plan "$tmp/s.json" --steps 3 --format json --checkpoint-dir "$tmp/ckt" \
  --save-weights "$tmp/wt.safetensors" >"$tmp/ckt.out"
check "tp 2 x cp 2 threads run with checkpoints" $?
OMP_NUM_THREADS=1 timeout 240 "$FSDPX" run --plan "$tmp/s.json" --steps 3 --format json --processes \
  --checkpoint-dir "$tmp/ckp" --save-weights "$tmp/wp.safetensors" >"$tmp/ckp.out"
check "tp 2 x cp 2 as processes with --checkpoint-dir and --save-weights" $?
same=0
for f in "$tmp"/ckt/step-000003/*; do cmp -s "$f" "$tmp/ckp/step-000003/$(basename "$f")" || same=1; done
[ -f "$tmp/ckt/step-000003/rank-00000.bin" ] && cmp -s "$tmp/wt.safetensors" "$tmp/wp.safetensors" || same=1
check "the processes' checkpoint and weights equal the threads run's, byte for byte" $same
hash_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['final_params_hash'])" "$1"; }
[ "$(hash_of "$tmp/ckt.out")" = "$(hash_of "$tmp/ckp.out")" ]; check "the processes' parameter hash is the threads run's" $?
"$FSDPX" run --plan "$tmp/s.json" --steps 6 --format json >"$tmp/six.out"
check "tp 2 x cp 2 threads run, 6 steps" $?
OMP_NUM_THREADS=1 timeout 240 "$FSDPX" run --plan "$tmp/s.json" --steps 6 --format json --processes \
  --checkpoint-dir "$tmp/ckp" --resume >"$tmp/res.out"
check "tp 2 x cp 2 resumed as processes" $?
tail3() { python3 -c "import json,sys; print([s['loss'] for s in json.load(open(sys.argv[1]))['steps']][-3:])" "$1"; }
[ "$(tail3 "$tmp/six.out")" = "$(tail3 "$tmp/res.out")" ]
status=$?
check "resumed as processes, steps 4-6 are the uninterrupted run's bit for bit ($(tail3 "$tmp/res.out"))" $status

# Calibration from a tp run's profile: the collectives are matched and the fabric fitted.
"$FSDPX" run --plan "$tmp/chosen4.json" --steps 4 --profile "$tmp/prof.json" >/dev/null
check "profiled tp run" $?
"$FSDPX" calibrate --profile "$tmp/prof.json" -o "$tmp/cal.json" --format json >"$tmp/cal.out"
check "calibrate from the tp profile" $?
python3 - "$tmp/cal.out" "$tmp/cal.json" <<'PY'
import json, sys
c, cluster = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c["collectives"] and all(x["measured_s"] > 0 for x in c["collectives"]), c["collectives"]
assert any(x["name"].startswith("tp.") for x in c["collectives"])
assert not [u for u in c["unmatched"] if u.startswith("tp.")], c["unmatched"]
assert cluster["intra_node"]["bus_bw_gb_per_s"] == c["intra_node"]["bus_bw_gb_per_s"]
print("fabric:", c["intra_node"], "collectives:", len(c["collectives"]))
PY
check "calibrate matched every tp collective and wrote the fitted fabric" $?

finish
