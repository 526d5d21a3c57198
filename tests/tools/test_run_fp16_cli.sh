#!/usr/bin/env bash
# CLI test of fp16 with dynamic loss scaling in `fsdpx run` (CPU backend): the shipped example plan
# (configs/plans/llama-tiny-cpu-fsdp4-fp16.json) trains as it is; started at a scale of 2^40 the run skips
# its first steps while the scale halves (text output, JSON steps and profile say which), then trains; a run
# stopped after a checkpoint and resumed continues the scale and the losses of an uninterrupted run
# exactly; a loss_scale on a bf16 plan is refused with one line and exit status 2; `fsdpx plan --fp16` writes
# fp16 plans with the default loss scaling (refused where the target cannot run them) and `fsdpx estimate`
# counts the unscale pass in its step-time bound.
set -u
FSDPX="$1"
PLANS="$2"
source "$(dirname "$0")/cli_check.sh"
example="$PLANS/llama-tiny-cpu-fsdp4-fp16.json"

"$FSDPX" run --plan "$example" --steps 40 --format json >"$tmp/example.json"
check "the fp16 example plan runs as it is" $?
python3 - "$tmp/example.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
losses = [s["loss"] for s in j["steps"] if not s["skipped"]]
print(f"example: {len(j['steps'])} steps, {sum(s['skipped'] for s in j['steps'])} skipped, loss {losses[0]:.4f} -> {losses[-1]:.4f}")
assert all(s["loss_scale"] > 0 for s in j["steps"])
assert losses[-1] < losses[0] - 0.3
PY
check "the example trains (loss falls by > 0.3), every step reports its loss scale" $?

python3 - "$example" "$tmp/big.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["loss_scale"]["initial_scale"] = 2.0 ** 40
j["loss_scale"]["growth_interval"] = 5
json.dump(j, open(sys.argv[2], "w"), indent=2)
PY
"$FSDPX" run --plan "$tmp/big.json" --steps 40 --profile "$tmp/prof.json" >"$tmp/big.txt"
check "a run from 2^40" $?
"$FSDPX" run --plan "$tmp/big.json" --steps 40 --format json >"$tmp/big_run.json"
check "the same run, JSON" $?
python3 - "$tmp/big_run.json" "$tmp/prof.json" "$tmp/big.txt" <<'PY'
import json, sys
j, prof, text = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read()
steps = j["steps"]
k = 0
while steps[k]["skipped"]:
    assert steps[k]["loss_scale"] == 2.0 ** (40 - k), (k, steps[k]["loss_scale"])
    k += 1
print(f"from 2^40: {k} steps skipped, first clean step at scale 2^{40 - k}")
assert 5 <= k < 30
skipped = [s["step"] for s in steps if s["skipped"]]
assert prof["skipped_steps"] == skipped, (prof["skipped_steps"], skipped)
assert prof["loss_scales"] == [s["loss_scale"] for s in steps]
import re
printed = {int(m.group(1)): "(skipped: inf/NaN gradients, scale backed off)" in line
           for line in text.splitlines() for m in [re.match(r"step +(\d+)/", line)] if m}
assert printed and all(flag == (n in skipped) for n, flag in printed.items()), printed
assert any(printed.values())
clean = [s["loss"] for s in steps if not s["skipped"]]
assert clean[-1] < clean[0] - 0.1
PY
check "skipped steps: a halving prefix from 2^40, in the JSON, the profile and the printed progress lines; then it trains" $?

run() { "$FSDPX" run --plan "$tmp/big.json" --format json "$@"; }
# Stopped after step 23, past the skipped prefix with clean steps counted towards the next growth.
run --steps 30 >"$tmp/full.json"
check "uninterrupted 30 steps" $?
run --steps 23 --checkpoint-dir "$tmp/ck" >/dev/null && run --steps 30 --checkpoint-dir "$tmp/ck" --resume >"$tmp/res.json"
check "23 steps, checkpoint, resume to 30" $?
python3 - "$tmp/full.json" "$tmp/res.json" "$tmp/ck/step-000023/manifest.json" <<'PY'
import json, sys
f, r, m = (json.load(open(p)) for p in sys.argv[1:])
tail = f["steps"][23:]
assert len(set(s["loss_scale"] for s in tail)) > 1  # the scale changes after the resume
assert [s["loss_scale"] for s in tail] == [s["loss_scale"] for s in r["steps"]]
assert [s["loss"] for s in tail] == [s["loss"] for s in r["steps"]]
assert f["final_params_hash"] == r["final_params_hash"]
assert m["loss_scaler"]["scale"] == f["steps"][23]["loss_scale"]
assert m["loss_scaler"]["growth_tracker"] > 0
print("resumed:", m["loss_scaler"])
PY
check "the checkpoint holds the scaler; the resumed run equals the uninterrupted one" $?

python3 - "$example" "$tmp/bf16.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["mixed_precision"]["param_dtype"] = "bf16"
json.dump(j, open(sys.argv[2], "w"))
PY
"$FSDPX" run --plan "$tmp/bf16.json" --steps 1 >"$tmp/out.txt" 2>"$tmp/err.txt"
status=$?
[ $status -eq 2 ] && [ "$(wc -l <"$tmp/err.txt")" -eq 1 ] && grep -q "bf16.json: /loss_scale: loss scaling is for fp16" "$tmp/err.txt"
check "loss_scale on a bf16 plan: exit 2, one line naming the file and /loss_scale ($(cat "$tmp/err.txt"))" $?

# fsdpx plan --fp16: fp16 with the default loss_scale section on the CPU cluster, and the plan runs; on a GPU
# cluster for the CUDA backend's fp16 model; refused (one line, exit 2) for torchtitan, whose config has no fp16.
"$FSDPX" plan --model llama-tiny --cluster cpu --world-size 4 --seq 64 --global-batch 8 --fp16 -o "$tmp/p16.json" \
  >/dev/null && "$FSDPX" run --plan "$tmp/p16.json" --steps 3 --format json >"$tmp/p16run.json"
check "plan --fp16 on the CPU cluster, and 3 steps of it" $?
msg=$(python3 - "$tmp/p16.json" "$tmp/p16run.json" <<'PY'
import json, sys
p, r = (json.load(open(f)) for f in sys.argv[1:])
ls = p.get("loss_scale", {})
ok = p["mixed_precision"]["param_dtype"] == "fp16" and ls.get("initial_scale") == 65536 and ls.get("dynamic") is True
ok = ok and [s["loss_scale"] for s in r["steps"]] == [65536.0] * 3
print(f"param {p['mixed_precision']['param_dtype']}, loss_scale {ls}, run scales {[s['loss_scale'] for s in r['steps']]}")
sys.exit(0 if ok else 1)
PY
)
check "plan --fp16: $msg" $?
"$FSDPX" plan --model llama3.2-1b --cluster dgx-h100 --world-size 8 --seq 2048 --global-batch 16 --fp16 \
  -o "$tmp/p16gpu.json" >/dev/null 2>"$tmp/err.txt" &&
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if p['mixed_precision']['param_dtype'] == 'fp16' and 'loss_scale' in p else 1)" "$tmp/p16gpu.json"
check "plan --fp16 on a GPU cluster (the CUDA backend's fp16 model) ($(cat "$tmp/err.txt"))" $?
for refused in "--cluster cpu --world-size 4 --target torchtitan@0.2.2|torchtitan's mixed_precision_param"; do
  args=${refused%%|*} want=${refused#*|}
  # shellcheck disable=SC2086
  "$FSDPX" plan --model llama-tiny $args --seq 64 --global-batch 8 --fp16 >/dev/null 2>"$tmp/err.txt"
  status=$?
  [ $status -eq 2 ] && [ "$(wc -l <"$tmp/err.txt")" -eq 1 ] && grep -q -- "--fp16: .*$want" "$tmp/err.txt"
  check "plan --fp16 $args refused ($(cat "$tmp/err.txt"))" $?
done

# fsdpx estimate --param-dtype fp16 counts the unscale pass: 2 x 4 bytes per element of the rank's fp32
# gradient shard at the GPU's HBM bandwidth and its efficiency past the last size point, in compute time.
E=(estimate --model llama3.1-8b --cluster dgx-h100 --world-size 8 --seq 4096 --format json)
"$FSDPX" "${E[@]}" --param-dtype fp16 >"$tmp/e16.json" && "$FSDPX" "${E[@]}" --param-dtype bf16 >"$tmp/e.json"
check "estimate in fp16 and bf16" $?
msg=$(python3 - "$tmp/e16.json" "$tmp/e.json" "$PLANS/../gpus/h100-sxm-80gb.json" <<'PY'
import json, sys
e16, e, gpu = (json.load(open(f)) for f in sys.argv[1:])
size_mb, eff = gpu["memory_efficiency"][-1]
moved = 2 * 4 * e16["total_params"] / 8
want = moved / (gpu["hbm_bw_tb_per_s"] * 1e12 * eff)
got = e16["unscale_time_s"]
same_peak = gpu["peak_tflops"]["fp16"] == gpu["peak_tflops"]["bf16"]
ok = moved > size_mb * 1e6 and abs(got - want) <= 1e-9 * want and "unscale_time_s" not in e
ok = ok and (not same_peak or abs(e16["compute_time_s"] - got - e["compute_time_s"]) <= 1e-9 * e["compute_time_s"])
print(f"unscale {got * 1e3:.3f} ms (hand count {want * 1e3:.3f} ms); compute {e16['compute_time_s']:.4f} s vs bf16 {e['compute_time_s']:.4f} s")
sys.exit(0 if ok else 1)
PY
)
check "estimate fp16: $msg" $?
finish
