#!/usr/bin/env python3
"""The planner's choices beside published layouts, simulated with the same models (docs/planner.md).

For Llama 3.1 8B (1 node), 70B (32 nodes) and 405B (2,048 nodes) of DGX H100 at sequence 8192: runs
`fsdpx plan` for the fsdpx and torchtitan@0.2.2 targets and simulates each published layout with the same
models. A layout given whole (degrees, schedule, micro-batch, recompute) becomes a plan built from the
chosen plan's JSON (torchtitan's per-block units; under pipeline parallelism Megatron-LM's even split of
the blocks over pp x vpp virtual stages, the embedding on the first and the head on the last, gradients
reduced once per step; fp32 reduction) and runs through `fsdpx simulate`. A layout that publishes only
its degrees (the Llama 3 paper) is the best plan inside them: `fsdpx plan` with those degrees fixed.
Prints markdown tables.

    tools/planner_comparison.py build/fsdpx > /tmp/table.md
"""
import json
import subprocess
import sys
import tempfile

GIB = 1024 ** 3
CASES = [
    # model, nodes, global batch, [(layout, source, parallelism, micro_batch, recompute)]; micro_batch 0: the
    # best plan inside the degrees (fsdpx plan, target torchtitan@0.2.2); parallelism None: not simulated.
    ("llama3.1-8b", 1, 32, [
        ("torchtitan llama3_8b.toml", "torchtitan v0.2.2 train_configs: FSDP 8, local batch 1, op-level SAC",
         dict(dp_shard=8), 1, "selective_op"),
        ("NeMo 8B on 8 GPUs", "dgxc-benchmarking 24.11: DP 4 (distributed optimizer) x CP 2, mb 1, no recompute",
         dict(dp_shard=4, cp=2, data_parallel="distributed_optimizer"), 1, "none"),
        ("Llama 3 paper", "no 8B layout published (Table 4 covers 405B)", None, 0, ""),
    ]),
    ("llama3.1-70b", 32, 512, [
        ("torchtitan llama3_70b.toml", "torchtitan v0.2.2 train_configs: FSDP 32 x TP 8, local batch 8, full AC",
         dict(dp_shard=32, tp=8, sequence_parallel=True), 8, "full"),
        ("NeMo 70B on 256 GPUs", "dgxc-benchmarking 24.11: DP 8 (distributed optimizer) x TP 4 x PP 4 (interleaved, "
         "VPP 5) x CP 2, mb 1, no recompute", dict(dp_shard=8, tp=4, cp=2, pp=4, vpp=5, pp_schedule="interleaved_1f1b",
         sequence_parallel=True, data_parallel="distributed_optimizer"), 1, "none"),
    ]),
    ("llama3.1-405b", 2048, 16384, [
        ("torchtitan llama3_405b.toml", "torchtitan v0.2.2 train_configs: FSDP 2048 x TP 8, local batch 2, full AC "
         "(bf16 here; the file also enables float8 and async TP)", dict(dp_shard=2048, tp=8, sequence_parallel=True),
         2, "full"),
        ("issue 14's quoted plan", "HSDP 32 x 64, TP 8, mb 1, full recompute on the first 27 of 126 blocks",
         dict(dp_replicate=32, dp_shard=64, tp=8, sequence_parallel=True, data_parallel="hsdp"), 1, "first:27"),
        ("Llama 3 paper (Table 4)", "TP 8, CP 1, PP 16, DP 128 (schedule, chunks and recompute not published: the "
         "best plan inside these degrees)", dict(dp_shard=128, tp=8, pp=16), 0, ""),
        ("NeMo 405B", "dgxc-benchmarking 24.11: TP 8, PP 9 (VPP 7), CP 2 on 576-2,304 GPUs: TP x PP x CP = 144 does "
         "not divide 16,384 GPUs", None, 0, ""),
    ]),
]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def layout_units(layers, full, sharded):
    """Per-block units; under pipeline parallelism Megatron-LM's even split over pp x vpp virtual stages."""
    stages = full["pp"] * full["vpp"]
    per_stage = layers // stages
    if full["pp"] > 1 and per_stage * stages != layers:
        raise SystemExit(f"{layers} blocks do not split evenly over {stages} virtual stages")
    units = ([{"modules": ["embedding"], "reshard_after_forward": sharded}] +
             [{"modules": [f"block.{i}"], "reshard_after_forward": sharded} for i in range(layers)] +
             [{"modules": ["final_norm", "head"], "reshard_after_forward": False}])
    if full["pp"] > 1:
        for u in units:
            m = u["modules"][0]
            u["stage"] = 0 if m == "embedding" else stages - 1 if m == "final_norm" else int(m[6:]) // per_stage
    return units


def layout_plan(base, par, micro_batch, recompute):
    p = json.loads(json.dumps(base))
    p.pop("predicted", None)
    p.pop("planner", None)
    p.pop("notes", None)
    full = dict(dp_replicate=1, dp_shard=1, tp=1, cp=1, pp=1, vpp=1, pp_schedule="none", sequence_parallel=False,
                data_parallel="fsdp_full_shard")
    full.update(par)
    p["parallelism"] = full
    p["training"]["micro_batch"] = micro_batch
    p["training"].pop("micro_batches", None)
    layers = p["model"]["layers"]
    sharded = full["data_parallel"] in ("fsdp_full_shard", "hsdp")
    p["units"] = layout_units(layers, full, sharded)
    if full["pp"] > 1:
        p["reduce_grads"] = "last_micro_batch"
    p["prefetch"] = {"forward": 1, "backward": 1, "max_all_gathers_in_flight": 2}
    p["mixed_precision"]["reduce_dtype"] = "fp32"
    if recompute.startswith("first:"):
        k = int(recompute.split(":")[1])
        p["recompute"] = ["full"] * k + ["none"] * (layers - k)
    else:
        p["recompute"] = recompute
    return p


def simulate(fsdpx, plan):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(plan, f)
    return json.loads(run([fsdpx, "simulate", "--plan", f.name, "--format", "json"]))


def row(name, source, tps, mfu, peak, limit):
    fits = "yes" if peak <= limit else f"no (> {limit / GIB:.0f} GiB)"
    return f"| {name} | {source} | {tps:.0f} | {100 * mfu:.1f}% | {peak / GIB:.1f} | {fits} |"


def plan_cmd(fsdpx, model, nodes, batch, target, fixed=None):
    cmd = [fsdpx, "plan", "--model", model, "--cluster", "dgx-h100", "--nodes", str(nodes), "--seq", "8192",
           "--global-batch", str(batch), "--target", target, "--format", "json"]
    for axis, degree in (fixed or {}).items():
        cmd += [f"--{axis.replace('_', '-')}", str(degree)]
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    fsdpx = sys.argv[1] if len(sys.argv) > 1 else "fsdpx"
    for model, nodes, batch, layouts in CASES:
        print(f"\n**{model}, {nodes} node(s) x 8 H100, sequence 8192, global batch {batch}** (plans may use 72 GiB: "
              "80 GiB less the default 10% margin)\n")
        print("| layout | what | tokens/s/GPU | MFU | peak GiB | fits |")
        print("|---|---|---|---|---|---|")
        base = None
        for target in ("fsdpx", "torchtitan@0.2.2"):
            p = plan_cmd(fsdpx, model, nodes, batch, target)
            if p.returncode != 0:
                print(f"| planner, target {target} | {p.stderr.strip().split(';')[0]} | | | | no |")
                continue
            res = json.loads(p.stdout)
            c = res["chosen"]
            base = base or res["plan"]
            print(row(f"planner, target {target}", c["label"], c["tokens_per_s_per_gpu"], c["mfu"],
                      c["peak_memory_bytes"], res["memory_limit_bytes"]))
        for name, source, par, mb, recompute in layouts:
            if par is None:
                print(f"| {name} | {source} | not simulated | | | |")
            elif mb == 0:
                p = plan_cmd(fsdpx, model, nodes, batch, "torchtitan@0.2.2", par)
                if p.returncode != 0:
                    print(f"| {name} | {source}: {p.stderr.strip()} | | | | no |")
                    continue
                res = json.loads(p.stdout)
                c = res["chosen"]
                print(row(name, f"{source}: {c['label']}", c["tokens_per_s_per_gpu"], c["mfu"], c["peak_memory_bytes"],
                          res["memory_limit_bytes"]))
            else:
                s = simulate(fsdpx, layout_plan(base, par, mb, recompute))
                print(row(name, source, s["tokens_per_s_per_gpu"], s["mfu"], s["peak_memory_bytes"], 72 * GIB))


if __name__ == "__main__":
    main()
