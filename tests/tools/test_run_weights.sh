#!/usr/bin/env bash
# CLI test of `fsdpx run --save-init-weights / --init-weights / --save-weights / --dump-batches` (CPU
# backend): starting from saved initial weights reproduces a seeded run bit-identically (llama-tiny, and
# gpt-tiny whose tied head puts the embedding in the last unit), also under another seed and on 1 rank
# (within 1e-5); the batch dump has the documented shape; a missing, extra or misshapen tensor, a
# truncated file and --init-weights with --resume exit 2 with a message naming the file.
set -u
FSDPX="$1"
source "$(dirname "$0")/cli_check.sh"
# Reads a safetensors file with the standard library: header JSON (the format is 8 bytes of size + JSON).
st_py() {  # file, python statements over h (header dict), data (bytes) and f (path)
  python3 - "$1" <<PY
import json, struct, sys
f = sys.argv[1]
raw = open(f, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h, data = json.loads(raw[8:8 + n]), raw[8 + n:]
$2
PY
}
same_losses() {  # a.json b.json -> "yes" when per-step losses and final hash are identical
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
ok = [s["loss"] for s in a["steps"]] == [s["loss"] for s in b["steps"]] and a["final_params_hash"] == b["final_params_hash"]
print("yes" if ok else f"no: {[s['loss'] for s in a['steps']]} vs {[s['loss'] for s in b['steps']]}")
PY
}

for m in llama-tiny gpt-tiny; do
  for w in 4 1; do
    "$FSDPX" plan --model $m --cluster cpu --world-size $w --seq 32 --global-batch 8 -o "$tmp/$m-$w.json" >/dev/null
    check "plan $m on $w ranks" $?
  done
  run() { "$FSDPX" run --plan "$tmp/$m-4.json" --steps 4 --format json "$@"; }
  run --save-init-weights "$tmp/$m-init.st" --save-weights "$tmp/$m-final.st" --dump-batches "$tmp/$m-b.st" \
    >"$tmp/$m-seeded.json"
  check "$m: seeded run saving weights and batches" $?
  run --init-weights "$tmp/$m-init.st" --save-weights "$tmp/$m-final2.st" >"$tmp/$m-loaded.json"
  check "$m: run from --init-weights" $?
  r=$(same_losses "$tmp/$m-seeded.json" "$tmp/$m-loaded.json")
  [ "$r" = yes ]; check "$m: --init-weights reproduces the seeded run bit-identically ($r)" $?
  cmp -s "$tmp/$m-final.st" "$tmp/$m-final2.st"; check "$m: final weight files are byte-identical" $?
  # Another seed with the same weights: the seed no longer decides the weights (only the data order).
  run --seed 7 --init-weights "$tmp/$m-init.st" --save-init-weights "$tmp/$m-init7.st" >/dev/null
  cmp -s "$tmp/$m-init.st" "$tmp/$m-init7.st"; check "$m: --init-weights overrides the seeded init" $?
  "$FSDPX" run --plan "$tmp/$m-1.json" --steps 4 --format json --init-weights "$tmp/$m-init.st" >"$tmp/$m-r1.json"
  check "$m: 1-rank run from the 4-rank init" $?
  d=$(python3 - "$tmp/$m-seeded.json" "$tmp/$m-r1.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
print(max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a["steps"], b["steps"])))
PY
)
  python3 -c "import sys; sys.exit(0 if float('$d') < 1e-5 else 1)"
  check "$m: 1 rank from the same init matches 4 ranks (max relative loss difference $d < 1e-5)" $?
done

# The batch dump: I32 tokens [steps, global_batch, seq + 1], all bytes accounted for.
st_py "$tmp/llama-tiny-b.st" '
t = h["tokens"]
assert t["dtype"] == "I32" and t["shape"] == [4, 8, 33] and t["data_offsets"] == [0, 4 * 8 * 33 * 4], t
assert len(data) == 4 * 8 * 33 * 4 and h["__metadata__"]["format"] == "fsdpx-batches/1"'
check "--dump-batches writes tokens [4, 8, 33] I32" $?
# Weight names and shapes as documented (executor/checkpoint/param_tensors.h).
st_py "$tmp/llama-tiny-init.st" '
assert h["block.1.qkv.weight"]["shape"] == [128, 64] and h["block.0.mlp_up.weight"]["shape"] == [352, 64]
assert h["final_norm.weight"]["shape"] == [64] and h["embedding.tok.weight"]["shape"] == [256, 64]
assert len([k for k in h if k != "__metadata__"]) == 2 * 6 + 3'
check "weight file: one tensor per parameter, [out, in] shapes" $?

# Broken weight files: rewritten with the standard library, each keeping a valid safetensors layout.
rewrite() {  # out, python statements editing `tensors` (name -> [dtype, shape, bytes])
  st_py "$tmp/llama-tiny-init.st" "
tensors = {k: [v['dtype'], v['shape'], data[v['data_offsets'][0]:v['data_offsets'][1]]] for k, v in h.items() if k != '__metadata__'}
$2
hdr, blob = {}, b''
for k, (dt, shape, b) in tensors.items():
    hdr[k] = {'dtype': dt, 'shape': shape, 'data_offsets': [len(blob), len(blob) + len(b)]}
    blob += b
text = json.dumps(hdr).encode()
text += b' ' * (-len(text) % 8)
open('$1', 'wb').write(struct.pack('<Q', len(text)) + text + blob)"
}
expect_error() {  # name, weights file, message fragment
  "$FSDPX" run --plan "$tmp/llama-tiny-4.json" --steps 1 --init-weights "$2" >/dev/null 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$3" "$tmp/err"
  status=$?  # before the message's command substitution sets $?
  check "$1 exits 2 naming the file ($(head -c 200 "$tmp/err"))" $status
}
rewrite "$tmp/missing.st" 'del tensors["block.1.mlp_norm.weight"]'
expect_error "missing tensor" "$tmp/missing.st" "$tmp/missing.st: /block.1.mlp_norm.weight: missing"
rewrite "$tmp/shape.st" 'tensors["head.weight"][1] = [64, 256]'
expect_error "transposed tensor" "$tmp/shape.st" "$tmp/shape.st: /head.weight/shape: [256, 64] expected, got [64, 256]"
rewrite "$tmp/extra.st" 'tensors["block.2.qkv.weight"] = ["F32", [1], b"\0\0\0\0"]'
expect_error "extra tensor" "$tmp/extra.st" "$tmp/extra.st: /block.2.qkv.weight: not a parameter of this model"
head -c 1000 "$tmp/llama-tiny-init.st" >"$tmp/trunc.st"
expect_error "truncated file" "$tmp/trunc.st" "$tmp/trunc.st: /"
expect_error "absent file" "$tmp/absent.st" "$tmp/absent.st: cannot open"
"$FSDPX" run --plan "$tmp/llama-tiny-4.json" --steps 1 --init-weights "$tmp/llama-tiny-init.st" --resume \
  --checkpoint-dir "$tmp/ck" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "cannot be combined with --resume" "$tmp/err"; check "--init-weights with --resume exits 2" $?

finish
