#!/usr/bin/env python3
"""tools/pytorch_host_time.py — how long the host takes to issue one torchtitan training step, per phase.

Runs torchtitan's eager Llama block (tools/fsdp2_memory_oracle.py's copy of torchtitan/models/llama3: eager fp32
RMSNorm, complex RoPE, separate wq/wk/wv, repeat_kv, SDPA, SwiGLU; fp32 cross-entropy, "del pred" before
backward) through the real FSDP2 code (fully_shard per block, bf16 params / fp32 reduce), optionally op-level
SAC, clip_grad_norm_ and foreach AdamW, on tiny CPU tensors and a fake process group of `--world` ranks
(torch.testing._internal.distributed.fake_pg: collectives return at once). With tensors this small the kernels
take microseconds, so the CPU time of each phase is the host's: Python, the dispatcher, autograd, DTensor and
FSDP2's hooks. Leaves out CUDA's own launch latency (a few microseconds per kernel, not run here) and the
speed of the host the published runs used. Developer tooling (needs torch from PyPI); docs/validation.md
quotes its output, nothing in the product or its tests reads it.

Usage: .venv/bin/python tools/pytorch_host_time.py [--layers 8] [--ac selective|full|none] [--steps 10]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fsdp2_memory_oracle import Llama, apply_ac, apply_fsdp  # noqa: E402  (torchtitan's model and parallelisms)


def timed(fn):
    # CPU time of this (single-threaded) process: on a shared machine the wall time also counts the time
    # other processes held the core, which the host of a training run does not share.
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--ac", choices=["none", "selective", "full"], default="selective")
    ap.add_argument("--world", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    torch.set_num_threads(1)
    dist.init_process_group("fake", rank=0, world_size=args.world, store=FakeStore())
    mesh = init_device_mesh("cpu", (args.world,), mesh_dim_names=("dp_shard",))
    # Tiny shapes with Llama-3's structure (GQA 4:1): every op runs, none costs compute.
    c = dict(layers=args.layers, hidden=64, heads=4, kv_heads=1, ffn=128, vocab=256)
    seq = 16
    model = Llama(c, seq)
    apply_ac(model, "selective" if args.ac == "selective" else args.ac)
    apply_fsdp(model, mesh, True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
    tokens = torch.randint(0, c["vocab"], (1, seq))
    labels = torch.randint(0, c["vocab"], (1, seq))

    phases = {"forward": [], "backward": [], "clip": [], "optimizer": []}
    for step in range(args.steps + 3):  # three warm-up steps (lazy init, optimizer state)
        opt.zero_grad()
        loss, t_fwd = timed(lambda: F.cross_entropy(model(tokens).flatten(0, 1).float(), labels.flatten(0, 1)))
        _, t_bwd = timed(loss.backward)
        _, t_clip = timed(lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True))
        _, t_opt = timed(opt.step)
        if step >= 3:
            for k, t in zip(phases, (t_fwd, t_bwd, t_clip, t_opt)):
                phases[k].append(t)
    dist.destroy_process_group()
    med = {k: sorted(v)[len(v) // 2] for k, v in phases.items()}
    print(json.dumps({
        "torch": torch.__version__, "layers": args.layers, "ac": args.ac, "world": args.world,
        "steps": args.steps, "params": sum(p.numel() for p in model.parameters()),
        "median_ms": {k: round(1e3 * v, 3) for k, v in med.items()},
        "per_block_ms": {k: round(1e3 * med[k] / args.layers, 3) for k in ("forward", "backward")},
    }, indent=1))


if __name__ == "__main__":
    main()
