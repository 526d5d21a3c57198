#!/usr/bin/env python3
"""tools/torch_fsdp2_trace.py — a PyTorch profiler (Kineto) trace of an FSDP2 run of fsdpx's PyTorch twin
(tools/torch_reference.py) on CPU with gloo, one file per rank, as torchtitan writes them
(DIR/rank{r}_trace.json.gz). The plan fixes the model, batch and FSDP units (each unit one fully_shard
module, reshard_after_forward as planned, the root last); gradient accumulation runs the plan's micro-batches
per step. Developer tooling (needs torch); fsdpx's tests read the trace it wrote, never torch.

  .venv/bin/python tools/torch_fsdp2_trace.py --plan configs/plans/llama-tiny-cpu-fsdp4.json --out DIR
Leaves out mixed precision (the CPU twin computes in fp32) and tensor/context/pipeline parallelism.
"""
import argparse
import gzip
import json
import math
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402


def unit_of(name, units):
    """The plan unit (index) whose module list holds parameter `name` ("block.0.qkv.weight" -> "block.0")."""
    for i, u in enumerate(units):
        if any(name == m or name.startswith(m + ".") for m in u["modules"]):
            return i
    sys.exit(f"torch_fsdp2_trace.py: parameter {name} is in no unit of the plan")


class Unit(nn.Module):
    """One FSDP unit's parameters, registered under their fsdpx names with '.' as '__'."""

    def __init__(self, tensors):
        super().__init__()
        for n, t in tensors.items():
            self.register_parameter(n.replace(".", "__"), nn.Parameter(t))

    def params(self):
        return {n.replace("__", "."): p for n, p in self.named_parameters(recurse=False)}


class BlockUnit(Unit):
    def __init__(self, tensors, fns, prefix):
        super().__init__(tensors)
        self.fns, self.prefix = fns, prefix

    def forward(self, x):
        p = self.params()
        x = x + self.fns.attention(x, p, self.prefix)
        return x + self.fns.mlp(x, p, self.prefix)


class EmbedUnit(Unit):
    def forward(self, tokens):
        return F.embedding(tokens, self.params()["embedding.tok.weight"])


class HeadUnit(Unit):
    def __init__(self, tensors, fns):
        super().__init__(tensors)
        self.fns = fns

    def forward(self, x, targets):
        p = self.params()
        logits = F.linear(self.fns.norm(x, p, "final_norm"), p["head.weight"])
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


class Twin(nn.Module):
    """The twin's model as modules in the plan's unit order: embedding, blocks, final norm + head."""

    def __init__(self, plan, s, seq):
        super().__init__()
        gen = torch.Generator().manual_seed(plan["training"]["seed"])
        init = dict(normal=ref.INIT_STD, residual=ref.INIT_STD / math.sqrt(2 * s["layers"]))
        by_unit = [dict() for _ in plan["units"]]
        for n, (shape, kind) in ref.param_specs(s).items():
            t = torch.randn(shape, generator=gen) * init[kind] if kind in init else torch.full(shape, float(kind == "ones"))
            by_unit[unit_of(n, plan["units"])][n] = t
        fns = ref.make_loss_fn(s, seq, "cpu")
        mods = []
        for tensors, u in zip(by_unit, plan["units"]):
            m = u["modules"][0]
            mods.append(EmbedUnit(tensors) if m == "embedding" else HeadUnit(tensors, fns) if m == "final_norm"
                        else BlockUnit(tensors, fns, m + "."))
        self.units = nn.ModuleList(mods)

    def forward(self, tokens, targets):
        x = self.units[0](tokens)
        for b in self.units[1:-1]:
            x = b(x)
        return self.units[-1](x, targets)


def run(rank, world, args, plan):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp_shard",))
    s, t = ref.model_spec(plan["model"]), plan["training"]
    model = Twin(plan, s, t["seq"])
    for m, u in zip(model.units, plan["units"]):
        fully_shard(m, mesh=mesh, reshard_after_forward=u["reshard_after_forward"])
    fully_shard(model, mesh=mesh)
    o = {**ref.OPTIMIZER_DEFAULTS, **{k: v for k, v in plan["optimizer"].items() if k != "kind"}}
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                            weight_decay=o["weight_decay"])
    micro, accum = t["micro_batch"], t["global_batch"] // (t["micro_batch"] * world)
    gen = torch.Generator().manual_seed(rank)
    trace_dir = args.out

    def save(prof):
        path = os.path.join(trace_dir, f"rank{rank}_trace.json")
        prof.export_chrome_trace(path)
        with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        os.remove(path)

    sched = torch.profiler.schedule(wait=1, warmup=1, active=args.steps)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=save, record_shapes=False) as prof:
        for step in range(2 + args.steps):
            for _ in range(accum):
                tokens = torch.randint(0, s["vocab"], (micro, t["seq"] + 1), generator=gen)
                loss = model(tokens[:, :-1], tokens[:, 1:]) / accum
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), o["grad_clip_norm"])
            opt.step()
            opt.zero_grad()
            prof.step()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--out", required=True, help="trace directory (rank{r}_trace.json.gz)")
    ap.add_argument("--steps", type=int, default=2, help="profiled steps (after one wait and one warm-up step)")
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    plan = json.load(open(args.plan))
    p = plan["parallelism"]
    if p["tp"] != 1 or p["cp"] != 1 or p["pp"] != 1 or p["dp_replicate"] != 1:
        sys.exit("torch_fsdp2_trace.py: FSDP over dp_shard only")
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(run, args=(p["dp_shard"], args, plan), nprocs=p["dp_shard"], join=True)


if __name__ == "__main__":
    main()
