#!/usr/bin/env bash
# fsdpx's CPU trainer against PyTorch without PyTorch: 20 steps of llama-tiny, gpt-tiny, llama-tiny
# with LoRA (r 8 on all seven projections), mixtral-tiny (4 experts, top-2, aux loss 0.02), deepseek-tiny (latent
# attention, DeepSeek-V3's MoE block) and deepseek-tiny-yarn (the same with YaRN RoPE scaling) from the plans'
# seeded init must give the per-step losses and gradient norms that tools/torch_reference.py computed from
# the same weights (and adapters) and batches (tests/data/torch_reference/, README.md there has the
# commands), on 4 ranks and on 1, within a
# relative 5e-6: 5x the largest difference measured (8.8e-7: gpt-tiny, 1 rank; BLAS or plain loops, any
# thread count), below what a RoPE theta of 5e5 instead of 1e4 changes (1e-5) and far below a norm eps of
# 1e-6 (6e-4) or bf16 autocast (3.5e-5); for LoRA below leaving out the adapters' weight decay (8.9e-6);
# for mixtral-tiny (measured 2.4e-7 loss, 1.5e-8 grad norm) below the aux loss over the global batch instead
# of each micro-batch (1.0e-5 loss, 7.9e-5 grad norm) and an aux coefficient of 0.021 (4.3e-4); for deepseek-tiny
# (measured 2.1e-7 loss, 1.7e-8 grad norm) below rotate_half instead of interleaved RoPE on the latent
# attention's rope part (1.8e-5 loss, 1.4e-4 grad norm), routed scaling 2.4 instead of 2.5 (1.8e-4) and no
# balance loss (4.6e-4); for deepseek-tiny-yarn (deepseek-tiny with YaRN: factor 4 over 32 tokens, rope_theta 100,
# mscale 1, mscale_all_dim 0.707; tests/data/torch_reference/README.md has the measured differences and what
# leaving out each part of YaRN changes).
set -u
FSDPX="$1"
DATA="$2/torch_reference"
source "$(dirname "$0")/cli_check.sh"

for m in llama-tiny gpt-tiny llama-tiny-lora mixtral-tiny deepseek-tiny deepseek-tiny-yarn; do
  for w in 4 1; do
    "$FSDPX" run --plan "$DATA/$m.w$w.plan.json" --steps 20 --format json >"$tmp/$m-$w.json"
    check "$m on $w ranks: 20 steps" $?
    msg=$(python3 - "$DATA/$m.torch.json" "$tmp/$m-$w.json" <<'PY'
import json, sys
torch, fsdpx = (json.load(open(p))["steps"] for p in sys.argv[1:])
assert len(torch) == len(fsdpx) == 20, (len(torch), len(fsdpx))
rel = lambda key: max(abs(t[key] - f[key]) / abs(t[key]) for t, f in zip(torch, fsdpx))
loss, norm = rel("loss"), rel("grad_norm")
print(f"max relative difference: loss {loss:.2e}, grad norm {norm:.2e} (tolerance 5e-6)")
sys.exit(0 if loss < 5e-6 and norm < 5e-6 else 1)
PY
)
    check "$m on $w ranks matches PyTorch: $msg" $?
    echo "$m on $w ranks: $msg"
  done
done

finish
