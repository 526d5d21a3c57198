#!/usr/bin/env bash
# CLI test of `fsdpx sample` and `fsdpx export-hf` on CPU-trained checkpoints (llama-tiny, and gpt-tiny
# with its tied head): sampling is deterministic (greedy, and seeded at temperature > 0), reads the root or
# a step directory alike, and yields byte tokens; the Hugging Face export has transformers' names and
# shapes and the very values of the run's --save-weights file (q/k/v and gate/up split, GPT-2's Conv1D
# transposed); bad input exits 2 with one line. transformers itself is checked by tools/check_hf_export.py.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"
py() { python3 - "$@"; }

for m in llama-tiny gpt-tiny; do
  "$FSDPX" plan --model $m --cluster cpu --world-size 2 --seq 32 --global-batch 4 -o "$tmp/$m.json" >/dev/null
  check "$m: plan" $?
  "$FSDPX" run --plan "$tmp/$m.json" --steps 8 --checkpoint-dir "$tmp/$m-ck" --checkpoint-every 4 \
    --save-weights "$tmp/$m-w.st" >/dev/null
  check "$m: 8 steps with checkpoints" $?
  [ -f "$tmp/$m-ck/plan.json" ]; check "$m: run writes plan.json beside the checkpoints" $?
  s() { "$FSDPX" sample --checkpoint "$@" --tokens 24 --format json; }
  s "$tmp/$m-ck" --temperature 0 >"$tmp/g1.json" && s "$tmp/$m-ck" --temperature 0 >"$tmp/g2.json"
  check "$m: greedy sample" $?
  s "$tmp/$m-ck/step-000008" --temperature 0 >"$tmp/g3.json"; check "$m: sample from a step directory" $?
  s "$tmp/$m-ck" --temperature 1 --seed 1 >"$tmp/t1.json" && s "$tmp/$m-ck" --temperature 1 --seed 1 >"$tmp/t2.json" &&
    s "$tmp/$m-ck" --temperature 1 --seed 2 >"$tmp/t3.json"
  check "$m: seeded samples" $?
  r=$(py "$tmp"/g1.json "$tmp"/g2.json "$tmp"/g3.json "$tmp"/t1.json "$tmp"/t2.json "$tmp"/t3.json <<'PY'
import json, sys
g1, g2, g3, t1, t2, t3 = (json.load(open(p)) for p in sys.argv[1:])
bad = []
if g1 != g2: bad.append("greedy differs between runs")
if g1["tokens"] != g3["tokens"] or g3["step"] != 8: bad.append("root and step-000008 differ")
if t1 != t2: bad.append("same seed, other tokens")
if t1["tokens"] == t3["tokens"]: bad.append("seeds 1 and 2 drew the same 24 tokens")
if len(g1["tokens"]) != 24 or not all(0 <= t < 256 for t in g1["tokens"] + t1["tokens"]): bad.append("not 24 byte tokens")
if g1["prompt_tokens"] != list(b"In the beginning"): bad.append("prompt not byte-tokenised")
print("ok" if not bad else "; ".join(bad))
PY
)
  [ "$r" = ok ]; check "$m: deterministic byte sampling ($r)" $?
  "$FSDPX" sample --checkpoint "$tmp/$m-ck" --tokens 10 --temperature 0 >"$tmp/text.txt"
  head -c 16 "$tmp/text.txt" | grep -qx "In the beginning"; check "$m: text output starts with the prompt" $?
  "$FSDPX" sample --checkpoint "$tmp/$m-ck" --tokens 10 --temperature 0 -o "$tmp/text-o.txt" >"$tmp/none.txt"
  cmp -s "$tmp/text.txt" "$tmp/text-o.txt" && [ ! -s "$tmp/none.txt" ]; check "$m: sample -o writes what stdout shows" $?

  "$FSDPX" export-hf --checkpoint "$tmp/$m-ck" -o "$tmp/$m-hf" >/dev/null; check "$m: export-hf" $?
  r=$(py "$tmp/$m-hf" "$tmp/$m-w.st" $m <<'PY'
import json, struct, sys
def st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    return {k: (v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items() if k != "__metadata__"}, h.get("__metadata__", {})
out, model = sys.argv[1], sys.argv[3]
cfg = json.load(open(out + "/config.json"))
hf, meta = st(out + "/model.safetensors")
ours, _ = st(sys.argv[2])
def rows(name, r0, r1):  # rows [r0, r1) of one of our [out, in] tensors, as bytes
    shape, b = ours[name]
    cols = shape[1] if len(shape) == 2 else 1
    return b[4 * r0 * cols:4 * r1 * cols]
def transposed(name):  # our [out, in] tensor as [in, out] bytes
    (o, i), b = ours[name]
    f = struct.unpack(f"<{o * i}f", b)
    return struct.pack(f"<{o * i}f", *[f[r * i + c] for c in range(i) for r in range(o)])
bad = []
if meta.get("format") != "pt": bad.append("metadata format")
if model == "llama-tiny":
    want = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 176, "vocab_size": 256, "tie_word_embeddings": False}
    names = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"} | {f"model.layers.{i}.{t}.weight" for i in range(2) for t in
             ["input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
              "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]}
    checks = [("model.layers.1.self_attn.q_proj.weight", [64, 64], rows("block.1.qkv.weight", 0, 64)),
              ("model.layers.1.self_attn.k_proj.weight", [32, 64], rows("block.1.qkv.weight", 64, 96)),
              ("model.layers.1.self_attn.v_proj.weight", [32, 64], rows("block.1.qkv.weight", 96, 128)),
              ("model.layers.0.mlp.gate_proj.weight", [176, 64], rows("block.0.mlp_up.weight", 0, 176)),
              ("model.layers.0.mlp.up_proj.weight", [176, 64], rows("block.0.mlp_up.weight", 176, 352)),
              ("lm_head.weight", [256, 64], ours["head.weight"][1])]
else:
    want = {"architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 64, "n_head": 4, "n_inner": 256,
            "n_positions": 128, "vocab_size": 256, "tie_word_embeddings": True, "activation_function": "gelu_new"}
    names = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"} | {
        f"transformer.h.{i}.{t}.{p}" for i in range(2) for p in ["weight", "bias"] for t in
        ["ln_1", "ln_2", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]}
    checks = [("transformer.h.1.attn.c_attn.weight", [64, 192], transposed("block.1.qkv.weight")),
              ("transformer.h.0.mlp.c_proj.weight", [256, 64], transposed("block.0.mlp_down.weight")),
              ("transformer.h.0.mlp.c_fc.bias", [256], ours["block.0.mlp_up.bias"][1]),
              ("transformer.wpe.weight", [128, 64], ours["embedding.pos.weight"][1])]
for k, v in want.items():
    if cfg.get(k) != v: bad.append(f"config {k}={cfg.get(k)!r}, want {v!r}")
if set(hf) != names: bad.append(f"names: extra {sorted(set(hf) - names)[:3]}, missing {sorted(names - set(hf))[:3]}")
for name, shape, b in checks:
    if name not in hf or hf[name][0] != shape or hf[name][1] != b: bad.append(f"{name} differs")
print("ok" if not bad else "; ".join(bad))
PY
)
  [ "$r" = ok ]; check "$m: export has transformers' names, shapes and the run's values ($r)" $?
done

expect2() {  # name, message fragment, command...
  local name="$1" part="$2"; shift 2
  "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$part" "$tmp/err"
  rc=$?  # before the message's $(...) below resets $?
  check "$name exits 2 with one line ($(head -c 160 "$tmp/err"))" $rc
}
expect2 "sample without plan.json" "$tmp/none/plan.json: missing" "$FSDPX" sample --checkpoint "$tmp/none"
mkdir -p "$tmp/empty" && cp "$tmp/llama-tiny-ck/plan.json" "$tmp/empty/"
expect2 "sample without checkpoints" "no loadable checkpoint" "$FSDPX" sample --checkpoint "$tmp/empty"
expect2 "empty prompt" "--prompt: must not be empty" "$FSDPX" sample --checkpoint "$tmp/llama-tiny-ck" --prompt ""
expect2 "negative temperature" "--temperature" "$FSDPX" sample --checkpoint "$tmp/llama-tiny-ck" --temperature -1
expect2 "export-hf without -o" "--output" "$FSDPX" export-hf --checkpoint "$tmp/llama-tiny-ck"

finish
