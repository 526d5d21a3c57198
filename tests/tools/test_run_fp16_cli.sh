#!/usr/bin/env bash
# CLI test of fp16 with dynamic loss scaling in `fsdpx run` (CPU backend): the shipped example plan
# (configs/plans/llama-tiny-cpu-fsdp4-fp16.json) trains as it is; started at a scale of 2^40 the run skips
# its first steps while the scale halves (text output, JSON steps and profile say which), then trains; a run
# stopped after a checkpoint and resumed continues the scale and the losses of an uninterrupted run
# exactly; a loss_scale on a bf16 plan is refused with one line and exit status 2.
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
finish
