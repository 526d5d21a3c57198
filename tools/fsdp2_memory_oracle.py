#!/usr/bin/env python3
"""tools/fsdp2_memory_oracle.py — PyTorch's own FSDP2 memory accounting as fixtures for fsdpx's memory model.

Runs two training steps of a torchtitan-style Llama (torchtitan/models/llama3/model/model.py: RoPE, GQA
with repeat_kv, SDPA, SwiGLU, its eager fp32 RMSNorm; cross-entropy on the fp32-upcast logits, "del pred" before
backward) through the real FSDP2 code path (fully_shard with torchtitan's MixedPrecisionPolicy bf16/fp32,
one unit per block, embedding alone, norm + output together and not resharded: torchtitan's apply_fsdp),
optionally TP/SP as torchtitan's apply_tp, activation checkpointing as torchtitan's apply_ac (full, or
op-level selective with its _save_list), gradient clipping and AdamW (foreach), all under FakeTensorMode
(nothing is allocated) and a fake process group of any world size (torch.testing._internal.distributed.
fake_pg), with torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker counting every tensor by kind.
This is what torchtitan's scripts/estimate/estimation.py did before pytorch/torchtitan#2386 removed it.

Leaves out what no tensor accounting sees: the CUDA caching allocator (rounding, fragmentation, reserved
vs allocated), the CUDA context, NCCL's and cuBLAS's own buffers. Runs on fake CPU tensors when fake CUDA
tensors are unavailable (see docs/validation.md for what that changes). Developer tooling: needs torch
(pip, into .venv); the product and its tests read only the JSON it writes.

Usage: .venv/bin/python tools/fsdp2_memory_oracle.py --out tests/data/fsdp2_memory/fixtures.json [--only ID]
"""
import argparse
import contextlib
import gc
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Model shapes (torchtitan's llama3 flavours; Llama 2 7B/13B from Touvron et al. 2023 Table 1 / HF configs).
MODELS = {
    "llama3-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256),
    "llama2-7b": dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000),
    "llama2-13b": dict(layers=40, hidden=5120, heads=40, kv_heads=40, ffn=13824, vocab=32000),
    "llama3-70b": dict(layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256),
}


# Blocks built per model: the full depth's tracing takes minutes per configuration on two shared cores,
# and each block adds the same bytes, so the fixtures keep every width of the real shape and this depth
# (fsdpx is given the same depth when it is compared).
LAYERS = 4


def shape_of(cfg):
    return dict(MODELS[cfg["model"]], layers=LAYERS)


def configurations():
    """The fixture set: ids are stable, so a fixture can be regenerated alone (--only)."""
    out = []

    def add(model, dp_shard, dp_replicate=1, tp=1, ac="none", mb=1, seq=4096, raf=True):
        cid = f"{model}-r{dp_replicate}s{dp_shard}t{tp}-{ac}-mb{mb}-s{seq}-{'raf' if raf else 'noraf'}"
        out.append(dict(id=cid, model=model, dp_shard=dp_shard, dp_replicate=dp_replicate, tp=tp, ac=ac,
                        micro_batch=mb, seq=seq, reshard_after_forward=raf))

    for ac in ("none", "selective_op", "full"):
        for mb, seq in ((1, 2048), (2, 4096), (1, 8192)):
            add("llama3-8b", 8, ac=ac, mb=mb, seq=seq)
    add("llama3-8b", 8, ac="full", mb=4, seq=4096)
    add("llama3-8b", 8, ac="selective_op", mb=4, seq=2048)
    add("llama3-8b", 8, ac="none", mb=1, seq=4096, raf=False)
    add("llama3-8b", 8, ac="full", mb=2, seq=4096, raf=False)
    add("llama3-8b", 32, ac="full", mb=2, seq=8192)
    add("llama3-8b", 4, dp_replicate=4, ac="selective_op", mb=1, seq=4096)
    add("llama3-8b", 8, dp_replicate=2, ac="full", mb=2, seq=8192)
    add("llama2-7b", 8, ac="none", mb=1, seq=4096)
    add("llama2-7b", 8, ac="full", mb=4, seq=4096)
    add("llama2-7b", 16, ac="selective_op", mb=2, seq=4096, raf=False)
    add("llama2-13b", 8, ac="full", mb=2, seq=4096)
    add("llama2-13b", 16, ac="selective_op", mb=1, seq=4096)
    add("llama2-13b", 8, dp_replicate=2, ac="none", mb=1, seq=2048)
    add("llama3-70b", 64, ac="full", mb=1, seq=8192)
    add("llama3-70b", 32, ac="full", mb=2, seq=4096)
    add("llama3-70b", 128, ac="selective_op", mb=1, seq=4096)
    add("llama3-70b", 16, dp_replicate=4, ac="full", mb=1, seq=4096)
    add("llama3-70b", 64, ac="full", mb=1, seq=4096, raf=False)
    # No TP: FSDP2 over TP DTensors fails under FakeTensorMode (FSDPParam._init_sharding_spec computes
    # mesh coordinates with aten.nonzero, whose output shape a fake tensor cannot give); torchtitan's
    # estimator refused TP too. apply_tp stays for a torch that can.
    add("llama3-8b", 16, ac="none", mb=1, seq=8192)
    add("llama2-7b", 8, ac="selective_op", mb=2, seq=2048)
    add("llama2-13b", 32, ac="full", mb=4, seq=4096)
    add("llama3-70b", 32, ac="selective_op", mb=1, seq=2048, raf=False)
    return out


# ---- a torchtitan-style Llama (same ops, so the same tensors are saved for backward) ----

def rope_table(head_dim, seq, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    t = torch.arange(seq, device=freqs.device)
    return torch.polar(torch.ones(seq, head_dim // 2), torch.outer(t, freqs).float())  # complex64


def apply_rope(xq, xk, freqs):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs[: xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    return (torch.view_as_real(xq_ * f).flatten(3).type_as(xq), torch.view_as_real(xk_ * f).flatten(3).type_as(xk))


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    b, s, kv, d = x.shape
    return x[:, :, :, None, :].expand(b, s, kv, n_rep, d).reshape(b, s, kv * n_rep, d)


class RMSNorm(nn.Module):
    """torchtitan's eager RMSNorm (torchtitan/models/norms.py before nn.RMSNorm): the norm fsdpx's stack
    costs model for torchtitan (cost_models/stack_costs.h NormImpl::eager_fp32). nn.RMSNorm on CPU
    would decompose differently from its fused CUDA kernel."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads = c["heads"], c["kv_heads"]
        self.head_dim = c["hidden"] // c["heads"]
        self.wq = nn.Linear(c["hidden"], self.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c["hidden"], self.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c["hidden"], self.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.heads * self.head_dim, c["hidden"], bias=False)

    def forward(self, x, freqs):
        b, s, _ = x.shape
        xq = self.wq(x).view(b, s, -1, self.head_dim)  # -1: local heads under TP
        xk = self.wk(x).view(b, s, -1, self.head_dim)
        xv = self.wv(x).view(b, s, -1, self.head_dim)
        xq, xk = apply_rope(xq, xk, freqs)
        n_rep = self.heads // self.kv_heads
        q, k, v = xq.transpose(1, 2), repeat_kv(xk, n_rep).transpose(1, 2), repeat_kv(xv, n_rep).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(o.transpose(1, 2).contiguous().view(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.w2 = nn.Linear(c["ffn"], c["hidden"], bias=False)
        self.w3 = nn.Linear(c["hidden"], c["ffn"], bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.feed_forward = FeedForward(c)
        self.attention_norm = RMSNorm(c["hidden"], eps=1e-5)
        self.ffn_norm = RMSNorm(c["hidden"], eps=1e-5)

    def forward(self, x, freqs):
        h = x + self.attention(self.attention_norm(x), freqs)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, c, seq):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c["vocab"], c["hidden"])
        self.register_buffer("freqs_cis", rope_table(c["hidden"] // c["heads"], seq), persistent=False)
        self.layers = nn.ModuleDict({str(i): Block(c) for i in range(c["layers"])})
        self.norm = RMSNorm(c["hidden"], eps=1e-5)
        self.output = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers.values():
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))


# ---- torchtitan's parallelisms (torchtitan/models/llama3/infra/parallelize.py: apply_tp, apply_ac, apply_fsdp) ----

def apply_tp(model, tp_mesh):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    parallelize_module(model, tp_mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
    })
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)),
            "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(), "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(), "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            "feed_forward.w3": ColwiseParallel(),
        })


def op_sac_policy():
    """torchtitan's op-level SAC: save mm, SDPA and reduce-scatter outputs, but only every second mm."""
    from torch.utils.checkpoint import CheckpointPolicy
    ops = torch.ops.aten
    save = {ops.mm.default, torch.ops._c10d_functional.reduce_scatter_tensor.default, ops.max.default}
    for name in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"):
        if hasattr(ops, name):
            save.add(getattr(ops, name).default)

    meta = {}  # one policy per block: its mm counters, as torchtitan's _get_custom_policy(meta)

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        key = f"{mode}_mm_count"
        if func == ops.mm.default:
            meta[key] = meta.get(key, 0) + 1
        keep = func in save and not (func == ops.mm.default and meta.get(key, 0) % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def apply_ac(model, ac):
    if ac == "none":
        return
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    for name, block in list(model.layers.named_children()):
        if ac == "full":
            wrapped = checkpoint_wrapper(block, preserve_rng_state=False)
        else:
            wrapped = checkpoint_wrapper(block, preserve_rng_state=False,
                                         context_fn=lambda p=op_sac_policy(): create_selective_checkpoint_contexts(p))
        model.layers.register_module(name, wrapped)


def apply_fsdp(model, dp_mesh, raf):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model.tok_embeddings, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=raf)
    for block in model.layers.values():
        fully_shard(block, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=raf)
    fully_shard([model.norm, model.output], mesh=dp_mesh, mp_policy=mp, reshard_after_forward=False)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=raf)


# ---- one configuration under the tracker ----

def build_mesh(cfg, device):
    from torch.distributed.device_mesh import init_device_mesh
    dims, names = [], []
    for name, size in (("dp_replicate", cfg["dp_replicate"]), ("dp_shard", cfg["dp_shard"]), ("tp", cfg["tp"])):
        if size > 1 or name == "dp_shard":
            dims.append(size)
            names.append(name)
    mesh = init_device_mesh(device, tuple(dims), mesh_dim_names=tuple(names))
    dp = mesh["dp_replicate", "dp_shard"] if cfg["dp_replicate"] > 1 else mesh["dp_shard"]
    return mesh, dp


def peak_moment(tracker, peak_total):
    """The deepest module whose forward or backward peak reached the step's peak: the moment of the peak."""
    from torch.distributed._tools.mem_tracker import _ModState
    best = None
    for mod, stats in tracker.memory_tracking.items():
        for state, phase in ((_ModState.PEAK_FW, "forward"), (_ModState.PEAK_BW, "backward")):
            for snap in stats.snapshots.get(state, []):
                if any(d.get("Total", -1) >= peak_total for d in snap.values()):
                    depth = stats.mod_fqn.count(".") if stats.mod_fqn else 0
                    if best is None or depth > best[0]:
                        best = (depth, stats.mod_fqn, phase)
    if best is None:
        return {"module": "", "phase": "loss"}  # outside every module: the loss and its backward
    return {"module": best[1], "phase": best[2]}


def grouped_tracker_class():
    """FSDPMemTracker, keeping FSDP2's group hooks for fully_shard([norm, output]).

    The tracker (torch/distributed/_tools/fsdp2_mem_tracker.py, _instrument_fsdp_module) removes each
    FSDP state's forward hooks and puts a pre- and a post-forward hook on every module. For a grouped
    state that replaces FSDP2's _register_group_forward_hooks (_fsdp_state.py), whose post-forward runs
    once, when the group's last module is done: under the tracker it ran after the norm and again after
    the output, registered two pre- and post-backward hooks, and the backward resharded the head after
    the output's gradient, reduce-scattered it and all-gathered the head again for the norm's backward,
    which a run without the tracker does not do. Here a grouped state gets the tracker's wrappers through
    FSDP2's group registration; single-module states keep the tracker's own hooks.
    """
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp._fully_shard._fsdp_state import _register_group_forward_hooks

    class GroupedFSDPMemTracker(FSDPMemTracker):
        def _instrument_fsdp_module(self):
            super()._instrument_fsdp_module()
            seen = set()
            for module in self._root_mod.modules():
                if not isinstance(module, FSDPModule):
                    continue
                state = module._get_fsdp_state()
                group = state._modules
                if len(group) < 2 or id(state) in seen or state._fsdp_param_group is None:
                    continue
                seen.add(id(state))
                for m in group:  # the tracker's per-module forward hooks on this group
                    for hooks in (m._forward_pre_hooks, m._forward_hooks):
                        # The tracker's wrappers are functools.wraps of the state's bound hooks.
                        ours = (state._pre_forward, state._post_forward)
                        for key in [k for k, f in hooks.items() if getattr(f, "__wrapped__", None) in ours]:
                            del hooks[key]
                            m._forward_hooks_with_kwargs.pop(key, None)
                            m._forward_hooks_always_called.pop(key, None)
                            m._forward_pre_hooks_with_kwargs.pop(key, None)
                handle = _register_group_forward_hooks(
                    group, self._fsdp_state_pre_forward(group[0], state._pre_forward),
                    self._fsdp_state_post_forward(group[0], state._post_forward),
                    state._modules_to_run_forward, state._cast_output_dtype)
                state._pre_forward_hook_handle = state._post_forward_hook_handle = handle
                # The tracker wrapped the group's backward hooks once per module; keep one wrap, the
                # first module's, whose statistics the forward wrappers above create.
                pg, saved = state._fsdp_param_group, self._fsdp_mod_to_saved_methods[group[0]]
                pg.pre_backward = self._fsdp_param_group_pre_backward(group[0], saved.pre_backward)
                pg.post_backward = self._fsdp_param_group_post_backward(group[0], saved.post_backward)
                for m in group[1:]:
                    self._fsdp_mod_to_saved_methods[m] = saved

    return GroupedFSDPMemTracker


def run_config(cfg, device):
    import torch.distributed as dist
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.testing._internal.distributed.fake_pg import FakeStore

    c = shape_of(cfg)
    world = cfg["dp_replicate"] * cfg["dp_shard"] * cfg["tp"]
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    mesh, dp_mesh = build_mesh(cfg, device)
    tp = cfg["tp"] > 1
    with FakeTensorMode(allow_non_fake_inputs=True):  # the device mesh tensor is real
        with torch.device("meta"):
            model = Llama(c, cfg["seq"])
        if tp:
            apply_tp(model, mesh["tp"])
        apply_ac(model, cfg["ac"])
        apply_fsdp(model, dp_mesh, cfg["reshard_after_forward"])
        model.to_empty(device=device)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=True)
        shape = (cfg["micro_batch"], cfg["seq"])
        tokens = torch.randint(0, c["vocab"], shape, device=device)
        labels = torch.randint(0, c["vocab"], shape, device=device)
        tracker = grouped_tracker_class()(mod=model, optm=opt)
        tracker.track_inputs((tokens, labels))
        from torch.distributed.tensor.parallel import loss_parallel
        # The optimizer state a first step creates (AdamW's step, exp_avg, exp_avg_sq), from one step on
        # zero gradients: the same tensors as after a traced step (estimation.py traced two), at half the
        # tracing time. The tracker then follows one whole step.
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad()
        gc.collect()
        with tracker:
            for it in (1,):
                if it == 1:
                    tracker.reset_mod_stats()
                    start = restart_peak(tracker)
                with loss_parallel() if tp else contextlib.nullcontext():
                    pred = model(tokens)
                    loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
                    del pred
                    loss.backward()
                if it == 1:
                    train_peak = tracker.get_tracker_snapshot("peak")
                    moment = peak_moment(tracker, one(train_peak)["Total"])
                # Clipping stays outside both windows: torch's clip_grad_norm_ on FSDP2's sharded DTensor
                # gradients makes temporaries the size of the unsharded fp32 gradients here, where
                # torchtitan's clip_grad_norm_ (torchtitan/distributed/utils.py) reduces the local norms.
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
                restart_peak(tracker)
                opt.step()
                opt.zero_grad()
                gc.collect()  # fake tensors of the step freed before the next (estimation.py: gc.collect(1))
            opt_peak = tracker.get_tracker_snapshot("peak")
            end = tracker.get_tracker_snapshot("current")
    dist.destroy_process_group()
    return {"step_start": named(one(start)), "forward_backward_peak": named(one(train_peak)),
            "forward_backward_peak_at": moment, "optimizer_peak": named(one(opt_peak)), "step_end": named(one(end))}


def one(per_device):
    """The single device's snapshot (the fake rank has one)."""
    assert len(per_device) == 1, per_device.keys()
    return next(iter(per_device.values()))


def named(snap):
    return {str(k).split(".")[-1].lower(): int(v) for k, v in snap.items()}


def restart_peak(tracker):
    """Start a new peak window at the current live bytes (as MemTracker.__enter__ does) and return them."""
    tracker._peak_mem_snap = tracker.get_tracker_snapshot("current")
    tracker._peak_mem = {dev: snap["Total"] for dev, snap in tracker._peak_mem_snap.items()}
    return tracker.get_tracker_snapshot("current")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="fixtures JSON (written after every configuration)")
    ap.add_argument("--device", default="auto", help="cuda, cpu or auto (cuda fakes if they work, else cpu)")
    ap.add_argument("--only", default=None, help="run one configuration id in this process and print it")
    ap.add_argument("--part", default="0/1", help="k/n: only configurations k, k+n, k+2n, ... (parallel workers)")
    ap.add_argument("--merge", nargs="*", default=[], help="fixture files of other workers to take rows from")
    args = ap.parse_args()
    if args.only:
        cfg = next((c for c in configurations() if c["id"] == args.only), None)
        if cfg is None:
            sys.exit(f"--only: no configuration {args.only}")
        row = dict(cfg, **shape_of(cfg))
        row["tracker"] = run_config(cfg, args.device)
        print("FIXTURE " + json.dumps(row), flush=True)
        return
    device = args.device if args.device != "auto" else ("cuda" if probe_cuda_fakes() else "cpu")
    done = {}
    if os.path.exists(args.out):  # resume: keep configurations already measured with this torch
        old = json.load(open(args.out))
        if old.get("torch") == torch.__version__ and old.get("device") == device:
            done = {r["id"]: r for r in old["configurations"]}
    for other in args.merge:
        done.update({r["id"]: r for r in json.load(open(other))["configurations"] if r["id"] not in done})
    k, n = (int(x) for x in args.part.split("/"))
    for i, cfg in enumerate(configurations()):
        if cfg["id"] in done or i % n != k:
            continue
        t0 = time.time()
        # One process per configuration: the tracker and the fake process group start clean.
        out = subprocess.run([sys.executable, __file__, "--out", "-", "--device", device, "--only", cfg["id"]],
                             capture_output=True, text=True)
        line = next((l for l in out.stdout.splitlines() if l.startswith("FIXTURE ")), None)
        if line is None:
            print(f"{cfg['id']}: failed\n{out.stderr[-3000:]}", flush=True)
            continue
        done[cfg["id"]] = json.loads(line[len("FIXTURE "):])
        peak = done[cfg["id"]]["tracker"]["forward_backward_peak"]["total"]
        print(f"{cfg['id']}: {peak / 2**30:.2f} GiB ({time.time() - t0:.0f} s)", flush=True)
        write_fixtures(args.out, device, [done[c["id"]] for c in configurations() if c["id"] in done])
    write_fixtures(args.out, device, [done[c["id"]] for c in configurations() if c["id"] in done])


def write_fixtures(path, device, rows):
    doc = {"format": "fsdpx-fsdp2-memory-oracle/1", "torch": torch.__version__, "device": device,
           "generator": "tools/fsdp2_memory_oracle.py", "configurations": rows}
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def probe_cuda_fakes():
    """Whether FSDP2 can run on fake CUDA tensors here (no GPU): one tiny step."""
    try:
        cfg = dict(id="probe", model="tiny", dp_shard=2, dp_replicate=1, tp=1, ac="none", micro_batch=1, seq=16,
                   reshard_after_forward=True)
        MODELS["tiny"] = dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=256)
        run_config(cfg, "cuda")
        return True
    except Exception as e:  # noqa: BLE001 - any failure means: no CUDA fakes on this machine
        print(f"fake CUDA tensors unavailable ({type(e).__name__}: {str(e).splitlines()[0][:200]}); using cpu",
              file=sys.stderr)
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
        return False
    finally:
        MODELS.pop("tiny", None)


if __name__ == "__main__":
    main()
