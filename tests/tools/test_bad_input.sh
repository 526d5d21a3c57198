#!/usr/bin/env bash
# tests/tools/test_bad_input.sh FSDPX_BINARY DATA_DIR — every class of bad input to `fsdpx estimate`
# must exit with status 2 and print exactly one line on stderr that names the file (or option) and the
# offending key or path. Prints "N passed, M failed" and exits non-zero on any failure.
# Leaves out well-formed runs (tests/tools/test_estimate.sh).
set -u

if [[ $# -ne 2 ]]; then
  echo "usage: $0 FSDPX_BINARY DATA_DIR" >&2
  exit 2
fi
FSDPX=$1
DATA=$2
BAD=$DATA/bad
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME "NEEDLE1|NEEDLE2|..." ARGS... : runs fsdpx ARGS, checks exit 2, one stderr line and that
# the line contains every needle (fixed strings).
expect() {
  local name=$1 needles=$2
  shift 2
  "$FSDPX" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? problems=""
  local lines
  lines=$(wc -l <"$tmp/err")
  [[ $rc -eq 2 ]] || problems+=" exit status $rc (want 2);"
  [[ $lines -eq 1 ]] || problems+=" $lines stderr lines (want 1);"
  local needle
  IFS='|' read -r -a list <<<"$needles"
  for needle in "${list[@]}"; do
    grep -qF -- "$needle" "$tmp/err" || problems+=" stderr lacks '$needle';"
  done
  if [[ -z $problems ]]; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name:$problems"
    echo "     command: fsdpx $*"
    sed 's/^/     stderr: /' "$tmp/err"
  fi
}

# Model files: each class of strict-reader error.
expect "unknown key" "unknown_key.json|/layer_norm|unknown key" \
  estimate --model "$BAD/unknown_key.json" --cluster dgx-h100 --nodes 1
expect "wrong type" "wrong_type.json|/layers|integer" \
  estimate --model "$BAD/wrong_type.json" --cluster dgx-h100 --nodes 1
expect "missing field" "missing_field.json|/vocab|missing" \
  estimate --model "$BAD/missing_field.json" --cluster dgx-h100 --nodes 1
expect "non-positive size" "non_positive.json|/hidden|positive" \
  estimate --model "$BAD/non_positive.json" --cluster dgx-h100 --nodes 1
expect "heads not divisible by kv_heads" "heads_kv.json|/kv_heads|32|6" \
  estimate --model "$BAD/heads_kv.json" --cluster dgx-h100 --nodes 1
expect "truncated JSON" "truncated.json|invalid JSON" \
  estimate --model "$BAD/truncated.json" --cluster dgx-h100 --nodes 1
expect "Hugging Face unsupported architecture" "hf_unsupported.json|/architectures|FalconForCausalLM" \
  estimate --model "$BAD/hf_unsupported.json" --cluster dgx-h100 --nodes 1
expect "Hugging Face missing field" "hf_missing_field.json|/intermediate_size" \
  estimate --model "$BAD/hf_missing_field.json" --cluster dgx-h100 --nodes 1
expect "RoPE base not positive" "bad_rope_theta.json|/rope_theta|positive RoPE base|-500000" \
  estimate --model "$BAD/bad_rope_theta.json" --cluster dgx-h100 --nodes 1
expect "norm epsilon outside (0, 1)" "bad_norm_eps.json|/norm_eps|(0, 1)|1.5" \
  estimate --model "$BAD/bad_norm_eps.json" --cluster dgx-h100 --nodes 1

# Names and paths that do not resolve.
expect "unknown model name" "llama9-1t|llama3.1-8b" \
  estimate --model llama9-1t --cluster dgx-h100 --nodes 1
expect "missing file" "$BAD/no_such_model.json|cannot open" \
  estimate --model "$BAD/no_such_model.json" --cluster dgx-h100 --nodes 1
expect "unknown cluster name" "dgx-h900|dgx-h100" \
  estimate --model llama3.1-8b --cluster dgx-h900 --nodes 1

# Cluster files.
expect "bad cluster file" "bad_cluster.json|/gpu/hbm_gb|unknown key" \
  estimate --model llama3.1-8b --cluster "$BAD/bad_cluster.json" --nodes 1
expect "cluster with unknown GPU" "cluster_unknown_gpu.json|/gpu|h100-sxm-90gb" \
  estimate --model llama3.1-8b --cluster "$BAD/cluster_unknown_gpu.json" --nodes 1
expect "several nodes of a single-node cluster" "cpu|node" \
  estimate --model llama-tiny --cluster cpu --nodes 2

# Command-line values.
expect "unknown CLI enum value" "recompute|sometimes" \
  estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --recompute sometimes
expect "unknown CLI dtype" "param-dtype|fp7" \
  estimate --model llama3.1-8b --cluster dgx-h100 --nodes 1 --param-dtype fp7

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
