#!/usr/bin/env bash
# CLI test of LoRA (docs/lora.md): `fsdpx estimate` and `fsdpx plan` with --lora-rank 16 --lora-alpha 32 on
# every projection give the parameter, gradient and optimizer bytes of the hand count in docs/lora.md for
# llama3.1-8b on one H100 (seq 4096) and llama3.1-70b on one DGX H100 node; on one H100 at seq 4096 the
# planner finds a LoRA plan for llama3.1-8b and none for full fine-tuning; the shipped CPU LoRA example
# (configs/plans/llama-tiny-cpu-lora.json) trains from a base saved with --save-init-weights, the loss
# falls, and its plan refuses adapter dropout and unknown keys with one line and exit 2; a LoRA run's
# checkpoints resume bit-identically (and on another world size; in fp16 with the loss scaler's state) and
# export and sample the merged model.
set -u
FSDPX="$1"
ROOT="$2"
source "$(dirname "$0")/cli_check.sh"
LORA=(--lora-rank 16 --lora-alpha 32 --lora-targets q,k,v,o,gate,up,down)

state_is() {  # json file, python expression giving the {params, grads, optimizer} dict, the three figures
  python3 - "$1" "$2" "$3" "$4" "$5" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = eval(sys.argv[2])
want = [int(x) for x in sys.argv[3:6]]
got = [m["params"], m["grads"], m["optimizer"]]
print(f"params/grads/optimizer {got} vs hand count {want}")
sys.exit(0 if all(abs(g - w) <= 1 for g, w in zip(got, want)) else 1)
PY
}

# docs/lora.md, "Hand count".
E8=(16228294656 167772160 335544320)
E70=(18466801664 828375040 1656750080)
"$FSDPX" estimate --model llama3.1-8b --cluster dgx-h100 --world-size 1 --seq 4096 "${LORA[@]}" --format json >"$tmp/e8.json"
check "estimate llama3.1-8b LoRA" $?
msg=$(state_is "$tmp/e8.json" 'j["per_gpu_memory_bytes"]' "${E8[@]}"); check "estimate 8b: $msg" $?
"$FSDPX" estimate --model llama3.1-70b --cluster dgx-h100 --world-size 8 --seq 4096 "${LORA[@]}" --format json >"$tmp/e70.json"
check "estimate llama3.1-70b LoRA" $?
msg=$(state_is "$tmp/e70.json" 'j["per_gpu_memory_bytes"]' "${E70[@]}"); check "estimate 70b: $msg" $?

"$FSDPX" plan --model llama3.1-8b --cluster dgx-h100 --world-size 1 --seq 4096 --global-batch 8 "${LORA[@]}" \
  --format json -o "$tmp/p8.json" >"$tmp/s8.json"
check "plan llama3.1-8b LoRA on one H100 at seq 4096 fits" $?
msg=$(state_is "$tmp/s8.json" 'j["chosen"]["peak_memory_by_category_bytes"]' "${E8[@]}"); check "plan 8b: $msg" $?
grep -q '"lora"' "$tmp/p8.json"; check "the 8b plan file carries its lora section" $?
"$FSDPX" plan --model llama3.1-8b --cluster dgx-h100 --world-size 1 --seq 4096 --global-batch 8 >/dev/null 2>&1
[ $? -ne 0 ]; check "full fine-tuning of llama3.1-8b on one H100 at seq 4096 does not fit" $?
"$FSDPX" plan --model llama3.1-70b --cluster dgx-h100 --world-size 8 --seq 4096 --global-batch 8 "${LORA[@]}" --format json >"$tmp/s70.json"
check "plan llama3.1-70b LoRA on one node" $?
msg=$(state_is "$tmp/s70.json" 'j["chosen"]["peak_memory_by_category_bytes"]' "${E70[@]}"); check "plan 70b: $msg" $?

# The CPU example: from a saved base, the loss falls.
PLAN="$ROOT/configs/plans/llama-tiny-cpu-lora.json"
"$FSDPX" run --plan llama-tiny-cpu-lora --steps 1 --save-init-weights "$tmp/base.st" >/dev/null
check "LoRA example: save a base" $?
"$FSDPX" run --plan "$PLAN" --steps 30 --init-weights "$tmp/base.st" --format json >"$tmp/run.json"
check "LoRA example trains from the saved base" $?
msg=$(python3 - "$tmp/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
print(f"loss {s[0]['loss']:.4f} -> {s[-1]['loss']:.4f}")
sys.exit(0 if s[-1]["loss"] < s[0]["loss"] - 0.1 else 1)
PY
)
check "LoRA example: $msg" $?

"$FSDPX" run --plan "$PLAN" --steps 30 --init-weights "$tmp/base.st" --save-weights "$tmp/merged.st" >/dev/null
check "LoRA example: --save-weights writes the merged model" $?
cmp -s "$tmp/base.st" "$tmp/merged.st"; [ $? -ne 0 ]; check "the merged weights differ from the base" $?

# LoRA with fp16 and dynamic loss scaling: an initial scale that overflows skips steps and halves the scale
# (the adapters' gradients are unscaled and checked with the base's), then the adapters train.
python3 - "$PLAN" "$tmp/fp16.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["mixed_precision"]["param_dtype"] = "fp16"
j["loss_scale"] = {"initial_scale": 2.0 ** 40, "growth_factor": 2.0, "backoff_factor": 0.5,
                   "growth_interval": 1000, "dynamic": True}
json.dump(j, open(sys.argv[2], "w"))
PY
"$FSDPX" run --plan "$tmp/fp16.json" --steps 40 --init-weights "$tmp/base.st" --format json >"$tmp/run16.json"
check "LoRA with fp16 trains from the saved base" $?
msg=$(python3 - "$tmp/run16.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
scales = [x["loss_scale"] for x in s]
halved = all(b in (a, a / 2) for a, b in zip(scales, scales[1:])) and scales[-1] < scales[0]
print(f"scale {scales[0]:g} -> {scales[-1]:g}, loss {s[0]['loss']:.4f} -> {s[-1]['loss']:.4f}")
sys.exit(0 if halved and s[-1]["loss"] < s[0]["loss"] - 0.1 else 1)
PY
)
check "LoRA fp16: $msg" $?
# ... and its checkpoint carries the loss scaler with the adapters: 3 steps + --resume to 6 equal 6 steps.
"$FSDPX" run --plan "$tmp/fp16.json" --steps 6 --format json >"$tmp/f16full.json" &&
  "$FSDPX" run --plan "$tmp/fp16.json" --steps 3 --checkpoint-dir "$tmp/ck16" >/dev/null &&
  "$FSDPX" run --plan "$tmp/fp16.json" --steps 6 --checkpoint-dir "$tmp/ck16" --resume --format json >"$tmp/f16res.json"
check "LoRA fp16: 6 steps, and 3 steps + --resume" $?
msg=$(python3 - "$tmp/f16full.json" "$tmp/f16res.json" <<'PY'
import json, sys
full, res = ({s["step"]: s for s in json.load(open(p))["steps"]} for p in sys.argv[1:])
keys = ("loss", "grad_norm", "loss_scale", "skipped")
same = sorted(res) == [4, 5, 6] and all(res[k][x] == full[k][x] for k in res for x in keys)
print(f"steps 4-6 scales {[res[k]['loss_scale'] for k in sorted(res)]} vs {[full[k]['loss_scale'] for k in (4, 5, 6)]}")
sys.exit(0 if same else 1)
PY
)
check "LoRA fp16 resume bit-identical with the loss scaler: $msg" $?

# Checkpoints of a LoRA run (docs/lora.md "Checkpoints"): the adapters and their moments in
# adapters.safetensors; --resume continues bit-identically, and on 1 rank from a 4-rank checkpoint; export-hf
# writes the merged model, the very values of --save-weights; a damaged adapters file is refused.
L4="$ROOT/tests/data/torch_reference/llama-tiny-lora.w4.plan.json"
L1="$ROOT/tests/data/torch_reference/llama-tiny-lora.w1.plan.json"
"$FSDPX" run --plan "$L4" --steps 6 --save-weights "$tmp/full.st" --format json >"$tmp/full.json"
check "LoRA: 6 steps uninterrupted" $?
"$FSDPX" run --plan "$L4" --steps 3 --checkpoint-dir "$tmp/ck" >/dev/null
check "LoRA: 3 steps with --checkpoint-dir" $?
grep -q '"adapters"' "$tmp/ck/step-000003/manifest.json" && [ -s "$tmp/ck/step-000003/adapters.safetensors" ]
check "LoRA checkpoint: the manifest lists adapters.safetensors" $?
cp -r "$tmp/ck" "$tmp/ck1"
"$FSDPX" run --plan "$L4" --steps 6 --checkpoint-dir "$tmp/ck" --resume --save-weights "$tmp/resumed.st" \
  --format json >"$tmp/resumed.json"
check "LoRA: --resume to step 6" $?
"$FSDPX" run --plan "$L1" --steps 6 --checkpoint-dir "$tmp/ck1" --resume --format json >"$tmp/resumed1.json"
check "LoRA: --resume the 4-rank checkpoint on 1 rank" $?
cmp -s "$tmp/full.st" "$tmp/resumed.st"; check "LoRA: resumed and uninterrupted merged weights are bit-identical" $?
msg=$(python3 - "$tmp/full.json" "$tmp/resumed.json" "$tmp/resumed1.json" <<'PY'
import json, sys
full, res, res1 = ({s["step"]: s for s in json.load(open(p))["steps"]} for p in sys.argv[1:])
same = [res[k]["loss"] == full[k]["loss"] and res[k]["grad_norm"] == full[k]["grad_norm"] for k in (4, 5, 6)]
rel1 = max(abs(res1[k]["loss"] - full[k]["loss"]) / full[k]["loss"] for k in (4, 5, 6))
moved = abs(full[6]["loss"] - full[3]["loss"])
print(f"steps 4-6 {sorted(res)} identical {same}; on 1 rank max rel loss diff {rel1:.1e} (1e-5); loss moved {moved:.1e}")
sys.exit(0 if sorted(res) == sorted(res1) == [4, 5, 6] and all(same) and rel1 < 1e-5 and moved > 1e-4 else 1)
PY
)
check "LoRA resume: $msg" $?
"$FSDPX" export-hf --checkpoint "$tmp/ck" -o "$tmp/hf" >/dev/null; check "LoRA: export-hf of the checkpoint" $?
"$FSDPX" sample --checkpoint "$tmp/ck" --tokens 8 --temperature 0 >/dev/null; check "LoRA: sample the checkpoint" $?
msg=$(python3 - "$tmp/hf/model.safetensors" "$tmp/resumed.st" "$tmp/ck/step-000006/adapters.safetensors" <<'PY'
import json, struct, sys
def st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items() if k != "__metadata__"}
hf, ours, ad = st(sys.argv[1]), st(sys.argv[2]), st(sys.argv[3])
rows = lambda name, r0, r1: ours[name][4 * 64 * r0:4 * 64 * r1]  # rows of a [*, 64] tensor
pairs = [("model.embed_tokens.weight", ours["embedding.tok.weight"]), ("lm_head.weight", ours["head.weight"])]
for i in range(2):
    b, h = f"block.{i}.", f"model.layers.{i}."
    pairs += [(h + "self_attn.q_proj", rows(b + "qkv.weight", 0, 64)), (h + "self_attn.k_proj", rows(b + "qkv.weight", 64, 96)),
              (h + "self_attn.v_proj", rows(b + "qkv.weight", 96, 128)), (h + "self_attn.o_proj", ours[b + "attn_out.weight"]),
              (h + "mlp.gate_proj", rows(b + "mlp_up.weight", 0, 176)), (h + "mlp.up_proj", rows(b + "mlp_up.weight", 176, 352)),
              (h + "mlp.down_proj", ours[b + "mlp_down.weight"])]
bad = [n for n, want in pairs if hf[n if n.endswith(".weight") else n + ".weight"] != want]
down_b = struct.unpack("<512f", ad["params"][-4 * 512:])  # the last block's down B [64, 8], zero at the start
trained = any(x != 0 for x in down_b)
print(f"{len(pairs)} tensors compared, differing: {bad or 'none'}; adapters B trained: {trained}")
sys.exit(0 if not bad and trained else 1)
PY
)
check "LoRA export-hf equals --save-weights' merged model: $msg" $?
python3 - "$tmp/ck/step-000006/adapters.safetensors" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[-1] ^= 0xFF
open(p, "wb").write(bytes(b))
PY
out=$("$FSDPX" export-hf --checkpoint "$tmp/ck/step-000006" -o "$tmp/hf2" 2>&1 >/dev/null); st=$?
[ $st -eq 2 ] && printf '%s' "$out" | grep -q "adapters.safetensors: checksum mismatch"
check "LoRA: a damaged adapters file is refused ($out)" $?
out=$("$FSDPX" run --plan "$PLAN" --steps 1 --save-init-adapters "$tmp/a.st" 2>&1 >/dev/null)
[ $? -eq 0 ] && [ -s "$tmp/a.st" ]; check "--save-init-adapters writes the adapters ($out)" $?
out=$("$FSDPX" run --plan "$ROOT/tests/data/torch_reference/llama-tiny.w1.plan.json" --steps 1 \
  --save-init-adapters "$tmp/b.st" 2>&1 >/dev/null); st=$?
[ $st -eq 2 ] && printf '%s' "$out" | grep -q "no lora section" && [ ! -e "$tmp/b.st" ]
check "--save-init-adapters without a lora section refused ($out)" $?

bad_plan() {  # name, python edit of j, expected text
  python3 - "$PLAN" "$tmp/bad.json" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(j, open(sys.argv[2], "w"))
PY
  out=$("$FSDPX" run --plan "$tmp/bad.json" --steps 1 2>&1 >/dev/null); st=$?
  [ $st -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "$3"
  check "$1 ($out)" $?
}
bad_plan "adapter dropout refused by the CPU runtime" 'j["lora"]["dropout"] = 0.1' "/lora/dropout"
bad_plan "unknown lora key" 'j["lora"]["ranks"] = 2' "/lora/ranks"
bad_plan "unknown target" 'j["lora"]["targets"] = ["q", "x"]' "/lora/targets/1"
bad_plan "rank 0" 'j["lora"]["rank"] = 0' "/lora/rank"
finish
