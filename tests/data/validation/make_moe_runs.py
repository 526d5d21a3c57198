#!/usr/bin/env python3
"""Builds moe_runs.json (fsdpx-published-runs/1, extended for mixture-of-experts) from published tables
transcribed by hand (dgxc-benchmarking in moe_dgxc.py, Megatron-Bridge in moe_bridge.py).

Models: nothing; it writes down published MoE configurations and measurements, one case per table cell. Beside
the dense fields each case's model carries "moe" (and "mla" for DeepSeek-V3) as fsdpx's model spec names them,
and its parallelism carries "ep" and "etp"; every derived or assumed value is in the case's `uncertain`.
Run: python3 tests/data/validation/make_moe_runs.py > tests/data/validation/moe_runs.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_dgxc import TABLES  # noqa: E402

H100_NET = "inter_node_bw 400 Gb/s/GPU = DGX Cloud H100 reference (NDR), not restated per table"
GB200_NET = ("GB200 NVL72: gpus_per_node 72 (one NVLink domain) and inter_node_bw 400 Gb/s/GPU (ConnectX-7) "
             "assumed from the DGX GB200 reference design, not stated in the table")
PER_GPU = "tokens_per_s_per_gpu = published aggregate tokens/s / gpus"
OPT_NOTE = "Megatron distributed optimizer assumed (NeMo recipe default), not in the table"
SP_NOTE = "sequence_parallel assumed on for TP > 1 (NeMo recipe default), not in the table"
FP8_NOTE = ("fp8 = Transformer Engine FP8 linears in NeMo (scaling recipe not stated); attention, router and the "
            "rest in bf16")
MFU_NOTE = "published mfu_pct uses the source's own MoE FLOP count and peak; compare tokens/s"


def short_name(model):
    return model["name"].split(" ")[0].lower().replace(".", "p")


def layout(gpus, tp, pp, vp, cp, ep, etp):
    """Megatron-Core's layout: attention over tp x cp x dp x pp; experts over etp x ep x expert-dp (folded)."""
    dp = gpus // (tp * pp * cp)
    assert dp * tp * pp * cp == gpus, gpus
    assert (gpus // pp) % (ep * etp) == 0, (gpus, ep, etp)
    return {"dp_replicate": 1, "dp_shard": dp, "tp": tp, "pp": pp, "vpp": vp if pp > 1 else 1, "cp": cp,
            "ep": ep, "etp": etp, "sequence_parallel": tp > 1,
            "pp_schedule": ("interleaved_1f1b" if vp > 1 else "1f1b") if pp > 1 else "none",
            "data_parallel": "distributed_optimizer"}


def dgxc_case(t, precision, col, step_s, tok_s, mfu):
    (tag, commit, container), model, gpu = t["release"], t["model"], t["gpu"]
    gpus, layers, tp, pp, vp, cp, ep, etp, mbs, gbs, seq = col
    gb200 = gpu == "gb200"
    m = dict(model)
    m["moe"] = dict(model["moe"], **t["moe_extra"])
    if layers != model["layers"]:
        m["layers"], m["name"] = layers, f"{model['name']} ({layers}-layer proxy)"
    cid = f"dgxc-{tag}-{short_name(model)}-{precision}-{gpu.split('-')[0]}-{gpus}gpu"
    if layers != model["layers"]:
        cid += f"-{layers}l"
    unc = [GB200_NET if gb200 else H100_NET, PER_GPU, OPT_NOTE]
    if tp > 1:
        unc.append(SP_NOTE)
    if precision == "fp8":
        unc.append(FP8_NOTE)
    unc += t["extra"] + [MFU_NOTE]
    per_gpu = round(tok_s / gpus, 1)
    from_step = gbs * seq / step_s
    if abs(from_step - tok_s) > 0.01 * tok_s:
        # The printed throughput contradicts the printed step time and batch: keep the step time (what the
        # benchmark measures, README "Expected Performance") and derive tokens/s from it.
        per_gpu = round(from_step / gpus, 1)
        unc[1] = (f"tokens_per_s_per_gpu = global batch x seq / step time / gpus: the printed {tok_s:g} tokens/s "
                  f"is {tok_s / from_step:.2f} x {from_step:.0f} = {gbs} x {seq} / {step_s} s, which contradicts "
                  "the printed step time and batch; the step time is kept")
    return {
        "id": cid,
        "source": f"NVIDIA/dgxc-benchmarking {t['path']} @ {commit} ({tag.replace('p', '.')}, {container}) "
                  f"[moe:{cid}]",
        "framework": "nemo", "model": m, "seq_len": seq, "gpu": {"name": gpu}, "gpus": gpus,
        "gpus_per_node": 72 if gb200 else 8, "inter_node_bw_gbit_per_gpu": 400,
        "parallelism": layout(gpus, tp, pp, vp, cp, ep, etp),
        "micro_batch": mbs, "global_batch": gbs, "recompute": t["recompute"], "precision": precision,
        "compiled": False,
        "measured": {"tokens_per_s_per_gpu": per_gpu, "mfu_pct": mfu, "peak_memory_gib": None,
                     "step_time_s": step_s},
        "uncertain": unc,
    }


def dgxc():
    cases = []
    for t in TABLES:
        for precision, (steps, toks, mfus) in t["values"].items():
            for col, s, x, m in zip(t["cols"], steps, toks, mfus, strict=True):
                cases.append(dgxc_case(t, precision, col, s, x, m))
    return cases


def main():
    cases = dgxc()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "duplicate ids"
    json.dump({"format": "fsdpx-published-runs/1", "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
