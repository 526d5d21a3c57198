#!/usr/bin/env bash
# Computes, on a CPU machine, the references tools/gpu_check.sh compares the GPU run with, and writes them
# to tests/data/gpu_check/ (README.md there): llama-small, 20 steps at seq 128 and global batch 8 from the
# plan's seed, on the CPU backend (fp32) and in PyTorch (fp32, tools/torch_reference.py, same weights and
# batches), and the SHA-256 of those weights and batches, which the GPU run must reproduce from the seed;
# and the CPU losses of deepseek-tiny (MoE and latent attention) at the same size.
# Usage: tools/gpu_check_fixtures.sh FSDPX PYTHON_WITH_TORCH
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fsdpx="$1" py="$2"
d="$root/tests/data/gpu_check"
t="$(mktemp -d)"
trap 'rm -rf "$t"' EXIT
mkdir -p "$d"
"$fsdpx" plan --model llama-small --cluster cpu --world-size 1 --seq 128 --global-batch 8 -o "$d/llama-small.cpu.plan.json"
"$fsdpx" run --plan "$d/llama-small.cpu.plan.json" --steps 20 --format json \
  --save-init-weights "$t/init.safetensors" --dump-batches "$t/batches.safetensors" >"$d/llama-small.cpu.json"
# Hashes of the tensors alone: the batches' header names the data file's path, which differs per machine.
(cd "$t" && python3 "$root/tools/gpu_acceptance_report.py" payload-sha256 init.safetensors batches.safetensors) \
  >"$d/llama-small.sha256"
"$py" "$root/tools/torch_reference.py" --plan "$d/llama-small.cpu.plan.json" --weights "$t/init.safetensors" \
  --batches "$t/batches.safetensors" --steps 20 --threads 2 -o "$d/llama-small.torch.json" \
  --compare "$d/llama-small.cpu.json"
# The comparison names its file relative to the fixtures folder, not this machine's path.
sed -i "s|$d/llama-small.cpu.json|llama-small.cpu.json|" "$d/llama-small.torch.json"
# Mixture-of-experts and latent attention: the CPU losses only (tools/torch_reference.py runs dense Llamas).
for m in deepseek-tiny; do
  "$fsdpx" plan --model "$m" --cluster cpu --world-size 1 --seq 128 --global-batch 8 -o "$t/$m.plan.json"
  "$fsdpx" run --plan "$t/$m.plan.json" --steps 20 --format json \
    --save-init-weights "$t/$m.init.safetensors" --dump-batches "$t/$m.batches.safetensors" >"$d/$m.cpu.json"
  (cd "$t" && python3 "$root/tools/gpu_acceptance_report.py" payload-sha256 "$m.init.safetensors" \
    "$m.batches.safetensors") >"$d/$m.sha256"
done
