#!/usr/bin/env python3
"""Builds ground_truth_runs.json (fsdpx-published-runs/1) from published tables transcribed below.

Models: nothing; it only writes down published configurations and measurements, one case per table cell, with
every derived or assumed field named in the case's `uncertain`. Leaves out: MoE rows, fine-tuning/LoRA rows, and
any run whose configuration the source does not give. Sources and commits are named per table (see README.md).
Run: python3 tests/data/validation/make_ground_truth.py > tests/data/validation/ground_truth_runs.json
"""
import json
import sys

LLAMA31_8B = {"name": "Llama-3.1-8B", "arch": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
              "ffn_hidden": 14336, "ffn_kind": "swiglu", "vocab": 128256, "tied_embeddings": False}
LLAMA31_70B = {"name": "Llama-3.1-70B", "arch": "llama", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
               "ffn_hidden": 28672, "ffn_kind": "swiglu", "vocab": 128256, "tied_embeddings": False}
LLAMA31_405B = {"name": "Llama-3.1-405B (benchmark yaml: 16 KV groups)", "arch": "llama", "layers": 126,
                "hidden": 16384, "heads": 128, "kv_heads": 16, "ffn_hidden": 53248, "ffn_kind": "swiglu",
                "vocab": 128256, "tied_embeddings": False}
NEMOTRON_15B = {"name": "Nemotron-4 15B", "arch": "llama", "layers": 32, "hidden": 6144, "heads": 48, "kv_heads": 8,
                "ffn_hidden": 24576, "ffn_kind": "squared_relu", "vocab": 256000, "tied_embeddings": False}
NEMOTRON_340B = {"name": "Nemotron-4 340B", "arch": "llama", "layers": 96, "hidden": 18432, "heads": 96,
                 "kv_heads": 8, "ffn_hidden": 73728, "ffn_kind": "squared_relu", "vocab": 256000,
                 "tied_embeddings": False}
GPT3_175B = {"name": "GPT-3 175B (NeMo)", "arch": "gpt", "layers": 96, "hidden": 12288, "heads": 96, "kv_heads": 96,
             "ffn_hidden": 49152, "ffn_kind": "gelu", "vocab": 51200, "tied_embeddings": True}

NEMOTRON_NOTES = ["tied_embeddings=false from the Nemotron-4 report (untied), not in source",
                  "published mfu_pct uses the dgxc attention FLOP formula (see the source's Notes); compare tokens/s"]
H100_NET = "inter_node_bw 400 Gb/s/GPU = DGX Cloud H100 reference (NDR), not restated per table"
GB200_NET = ("GB200 NVL72: gpus_per_node 72 (one NVLink domain) and inter_node_bw 400 Gb/s/GPU (ConnectX-7) "
             "assumed from the DGX GB200 reference design, not stated in the table")
PER_GPU = "tokens_per_s_per_gpu = published aggregate tokens/s / gpus"
FP8_NOTE = ("fp8 = Transformer Engine FP8 linears in NeMo (recipe default delayed scaling assumed; not stated); "
            "attention and the rest in bf16")
SP_NOTE = "sequence_parallel assumed on for TP > 1 (NeMo recipe default), not in the table"
OPT_NOTE = "Megatron distributed optimizer assumed (NeMo recipe default), not in the table"
RECOMP_NONE = "recompute not stated in the table; none assumed"


def dgxc_case(tag, commit, path, container, model, precision, gpu, gpus, seq, tp, pp, vp, cp, mbs, gbs,
              step_s, tok_s, mfu, recompute="none", extra=()):
    """One dgxc-benchmarking table cell; dp is what is left after tp*pp*cp."""
    dp = gpus // (tp * pp * cp)
    assert dp * tp * pp * cp == gpus, (tag, gpus)
    gb200 = gpu == "gb200"
    name = model["name"].split(" (")[0].lower().replace("llama-3.1-", "llama3p1-").replace(" ", "-")
    cid = f"dgxc-{tag}-{name}-{precision}-{gpu.split('-')[0]}-{gpus}gpu"
    if model["layers"] != {"Llama-3.1-405B": 126}.get(model["name"].split(" (")[0], model["layers"]):
        cid += f"-{model['layers']}l"
    unc = [GB200_NET if gb200 else H100_NET, PER_GPU, OPT_NOTE]
    if tp > 1:
        unc.append(SP_NOTE)
    if recompute == "none":
        unc.append(RECOMP_NONE)
    if precision == "fp8":
        unc.append(FP8_NOTE)
    unc += list(extra)
    return {
        "id": cid,
        "source": f"NVIDIA/dgxc-benchmarking {path} @ {commit} ({tag.replace('p', '.')}, {container}) [gt:{cid}]",
        "framework": "nemo", "model": dict(model), "seq_len": seq, "gpu": {"name": gpu}, "gpus": gpus,
        "gpus_per_node": 72 if gb200 else 8, "inter_node_bw_gbit_per_gpu": 400,
        "parallelism": {"dp_replicate": 1, "dp_shard": dp, "tp": tp, "pp": pp, "vpp": vp if pp > 1 else 1,
                        "cp": cp, "sequence_parallel": tp > 1,
                        "pp_schedule": ("interleaved_1f1b" if vp > 1 else "1f1b") if pp > 1 else "none",
                        "data_parallel": "distributed_optimizer"},
        "micro_batch": mbs, "global_batch": gbs, "recompute": recompute, "precision": precision,
        "compiled": False,
        "measured": {"tokens_per_s_per_gpu": round(tok_s / gpus, 1), "mfu_pct": mfu, "peak_memory_gib": None,
                     "step_time_s": step_s},
        "uncertain": unc,
    }


def weak_scaling(tag, commit, path, container, model, precision, gpu, rows, seq, tp, pp, vp, cp, mbs,
                 recompute="none", extra=()):
    """rows: (gpus, gbs, step_s, aggregate tokens/s, mfu_pct[, layers, pp, vp])."""
    out = []
    for r in rows:
        m, p, v = dict(model), pp, vp
        if len(r) > 5:
            m["layers"], p, v = r[5], r[6], r[7]
            if m["layers"] != model["layers"]:
                m["name"] = f"{model['name']} ({m['layers']}-layer proxy)"
        out.append(dgxc_case(tag, commit, path, container, m, precision, gpu, r[0], seq, tp, p, v, cp, mbs,
                             r[1], r[2], r[3], r[4], recompute, extra))
    return out


def dgxc_v25p02():
    """dgxc-benchmarking v25.02 (= v25.03 tables), H100, NeMo 24.12."""
    t, c, k = "v25p02", "8f5cbb3", "NeMo 24.12"
    cases = []
    l8 = [(8, 128), (16, 256), (32, 512), (64, 1024), (128, 2048)]
    for prec, steps, toks, mfus in (
            ("bf16", [12.78, 12.99, 13.00, 13.00, 13.16], [82028, 161443, 322638, 645277, 1275155],
             [59.99, 59.03, 58.99, 58.99, 58.28]),
            ("fp8", [9.44, 9.47, 9.60, 9.64, 9.73], [111054, 221358, 437088, 870639, 1725163],
             [40.59, 40.45, 39.94, 39.77, 39.41])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(l8, steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README_8b.md", k, LLAMA31_8B, prec, "h100-sxm-80gb", rows,
                              8192, 1, 1, 1, 2, 1)
    l70 = [(64, 128), (128, 256), (256, 512), (512, 1024), (1024, 2048), (2048, 4096)]
    for prec, steps, toks, mfus in (
            ("bf16", [14.61, 14.70, 14.72, 14.80, 14.86, 14.84], [71756, 142663, 284881, 566797, 1129246, 2260623],
             [54.52, 54.20, 54.12, 53.84, 53.63, 53.68]),
            ("fp8", [10.46, 10.52, 10.75, 10.76, 10.83, 10.99], [100275, 199292, 390167, 779393, 1549142, 3053178],
             [38.08, 37.84, 37.04, 37.00, 36.77, 36.23])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(l70, steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README_70b.md", k, LLAMA31_70B, prec, "h100-sxm-80gb", rows,
                              8192, 4, 4, 5, 2, 1)
    # 405b: per-column layers, GBS, PP and VP printed in the table.
    shape = [(32, 126, 7, 1, 1), (96, 126, 21, 3, 7), (192, 252, 42, 3, 7), (576, 252, 126, 9, 7),
             (1152, 504, 126, 9, 7), (2304, 1008, 126, 9, 7)]
    for prec, steps, toks, mfus in (
            ("bf16", [9.00, 8.87, 17.30, 17.50, 17.60, 17.70], [114637, 116342, 119328, 117964, 234589, 466527],
             [57.65, 55.41, 56.03, 54.85, 54.54, 54.23]),
            ("fp8", [5.75, 5.63, 10.8, 11.00, 11.10, 11.20], [179511, 183337, 191146, 187671, 371961, 737280],
             [45.12, 43.65, 44.87, 43.61, 43.22, 42.83])):
        rows = [(g, b, s, x, m, lay, pp, vp) for (g, b, lay, pp, vp), s, x, m in zip(shape, steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README_405b.md", k, LLAMA31_405B, prec, "h100-sxm-80gb", rows,
                              8192, 8, 9, 7, 2, 1)
    g175 = [(128, 256), (256, 512), (512, 1024), (1024, 2048), (2048, 4096)]
    for prec, steps, toks, mfus in (
            ("bf16", [8.309, 8.408, 8.42, 8.453, 8.49], [63099, 124712, 249068, 496191, 988057],
             [53.54, 52.91, 52.84, 52.63, 52.40]),
            ("fp8", [5.626, 5.725, 5.774, 5.82, 5.96], [93190, 183157, 363206, 720671, 1407485],
             [39.52, 38.84, 38.51, 38.20, 37.30])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(g175, steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemo_megatron/README_175b.md", "NeMo container of the release", GPT3_175B,
                              prec, "h100-sxm-80gb", rows, 2048, 4, 8, 12, 1, 1,
                              extra=["tied_embeddings assumed (NeMo GPT default)"])
    g15 = [(16, 64), (32, 128), (64, 256), (128, 512), (256, 1024), (512, 2048), (1024, 4096), (2048, 8192)]
    for prec, steps, toks, mfus in (
            ("bf16", [2.812, 2.824, 2.845, 2.859, 2.852, 2.875, 2.895, 2.887],
             [93223, 185654, 368568, 733526, 1470654, 2917777, 5795239, 11622595],
             [62.49, 62.23, 61.77, 61.47, 61.62, 61.12, 60.70, 60.87]),
            ("fp8", [2.039, 2.046, 2.048, 2.059, 2.075, 2.12, 2.094, 2.12],
             [128565, 256250, 512000, 1018529, 2021351, 3956891, 8012042, 15827562],
             [43.07, 42.92, 42.88, 42.65, 42.32, 41.43, 41.94, 41.43])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(g15, steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemotron/README_15b.md", "NeMo container of the release", NEMOTRON_15B, prec,
                              "h100-sxm-80gb", rows, 4096, 4, 1, 1, 1, 4, extra=NEMOTRON_NOTES)
    g340 = [(128, 32), (256, 64), (512, 128), (1024, 256), (2048, 512)]
    for prec, steps, toks, mfus in (
            ("bf16", [4.61, 4.67, 4.7, 4.73, 4.84], [28432, 56134, 111551, 221686, 433296],
             [55.38, 54.67, 54.32, 53.98, 52.75]),
            ("fp8", [3.16, 3.21, 3.26, 3.34, 3.49], [41478, 81665, 160825, 313945, 600903],
             [40.38, 39.75, 39.14, 38.20, 36.56])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(g340, steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemotron/README_340b.md", "NeMo container of the release", NEMOTRON_340B, prec,
                              "h100-sxm-80gb", rows, 4096, 8, 8, 12, 1, 1, recompute="selective",
                              extra=NEMOTRON_NOTES + ["recompute selective as in the v24.11 case of the visible "
                                                      "file (NeMo Nemotron-4 340B recipe), not restated here"])
    return cases


def dgxc_v25p04():
    """dgxc-benchmarking v25.04 tables (H100): llama3.1/README.md and nemotron/README.md."""
    t, c, k = "v25p04", "741c886", "NeMo 25.04 container of the release"
    cases = []
    l8 = [(8, 128), (16, 256), (32, 512), (64, 1024), (128, 2048)]
    for prec, steps, toks, mfus in (
            ("bf16", [12.27, 12.3, 12.32, 12.33, 12.33], [85459, 170500, 340447, 680341, 1360683],
             [62.47, 62.31, 62.21, 62.16, 62.16]),
            ("fp8", [9.33, 9.36, 9.43, 9.48, 9.54], [112388, 224055, 444783, 884874, 1758618],
             [41.07, 40.94, 40.64, 40.42, 40.17])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(l8, steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_8B, prec, "h100-sxm-80gb", rows,
                              8192, 1, 1, 1, 2, 1)
    l70 = [(64, 128), (128, 256), (256, 512), (512, 1024), (1024, 2048), (2048, 4096)]
    rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(
        l70, [14.66, 14.67, 14.68, 14.67, 14.65, 14.66], [71526, 142955, 285716, 571821, 1145202, 2288843],
        [54.32, 54.29, 54.25, 54.29, 54.36, 54.32])]
    cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_70B, "bf16", "h100-sxm-80gb", rows,
                          8192, 4, 4, 5, 2, 1)
    rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(
        l70, [9.86, 9.95, 10, 10.07, 10.08, 10.15], [106346, 210769, 419430, 833030, 1664406, 3305855],
        [40.38, 40.02, 39.82, 39.54, 39.50, 39.23])]
    cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_70B, "fp8", "h100-sxm-80gb", rows,
                          8192, 4, 8, 5, 1, 1)
    shape = [(32, 64, 8, 1, 1), (64, 64, 30, 4, 8), (128, 128, 62, 4, 8), (512, 256, 126, 8, 8),
             (1024, 512, 126, 8, 8), (2048, 1024, 126, 8, 8)]
    for prec, steps, toks, mfus in (
            ("bf16", [5.4, 10.1, 19.62, 19.78, 19.84, 19.87], [97090, 51910, 53444, 106024, 211406, 422175],
             [55.23, 52.52, 55.31, 55.47, 55.31, 55.22]),
            ("fp8", [3.53, 6.32, 12.18, 12.37, 12.42, 12.56], [148524, 82957, 86090, 169535, 337706, 667883],
             [42.24, 41.97, 44.55, 44.35, 44.17, 43.68])):
        rows = [(g, b, s, x, m, lay, pp, vp) for (g, b, lay, pp, vp), s, x, m in zip(shape, steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_405B, prec, "h100-sxm-80gb", rows,
                              8192, 8, 8, 8, 2, 1)
    g15 = [(16, 64), (32, 128), (64, 256), (128, 512), (256, 1024), (512, 2048), (1024, 4096), (2048, 8192)]
    for prec, steps, toks, mfus in (
            ("bf16", [2.66, 2.66, 2.67, 2.67, 2.68, 2.71, 2.74, 2.78],
             [98550, 197101, 392725, 785450, 1565039, 3095427, 6123072, 12069940],
             [66.07, 66.07, 65.82, 65.82, 65.57, 64.85, 64.14, 63.21]),
            ("fp8", [1.98, 1.98, 1.98, 1.99, 2, 2.02, 2.03, 2.09],
             [132396, 264792, 529584, 1053845, 2097152, 4152776, 8264638, 16054752],
             [44.35, 44.35, 44.35, 44.13, 43.91, 43.48, 43.26, 42.02])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(g15, steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemotron/README.md", k, NEMOTRON_15B, prec, "h100-sxm-80gb", rows,
                              4096, 2, 1, 1, 1, 2, extra=NEMOTRON_NOTES)
    g340 = [(256, 64), (512, 128), (1024, 256), (2048, 512)]
    for prec, steps, toks, mfus in (
            ("bf16", [4.36, 4.39, 4.41, 4.43], [60125, 119428, 237772, 473398], [58.56, 58.16, 57.89, 57.63]),
            ("fp8", [2.93, 2.97, 3, 3.05], [89469, 176528, 349525, 687591], [43.55, 42.96, 42.53, 41.83])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip(g340, steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemotron/README.md", k, NEMOTRON_340B, prec, "h100-sxm-80gb", rows,
                              4096, 8, 8, 12, 1, 1, recompute="selective",
                              extra=NEMOTRON_NOTES + ["VP printed as NA in the README table; VP=12 read from the "
                                                      "same commit's nemotron/launch.sh (340b branch)",
                                                      "recompute selective as in the v24.11 case of the visible "
                                                      "file (NeMo Nemotron-4 340B recipe), not restated here"])
    return cases


def dgxc_v25p05():
    """dgxc-benchmarking v25.05 (68eaf7e) and v25.05.05 (c5c765f): GB200 and H100 tables."""
    cases = []
    t, c, k = "v25p05", "68eaf7e", "NeMo 25.04.01"
    for prec, steps, toks, mfus in (
            ("bf16", [9.347, 9.484, 9.508], [56092, 110563, 220567], [47.4, 46.7, 46.6]),
            ("fp8", [6.131, 6.183, 6.244], [85514, 169590, 335867], [36.1, 35.8, 35.5])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip([(128, 64), (256, 128), (512, 256)], steps, toks, mfus)]
        cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_405B, prec, "gb200", rows, 8192, 4, 8, 8, 2, 1)
    n340 = NEMOTRON_NOTES + ["recompute selective as in the v24.11 case of the visible file (NeMo Nemotron-4 "
                             "340B recipe), not restated here"]
    for prec, s15, x15, m15, s340, x340, m340 in (("bf16", 2.746, 95463, 56.7, 4.606, 56913, 47.3),
                                                  ("fp8", 1.988, 131863, 39.1, 3.107, 84372, 35.0)):
        cases += weak_scaling(t, c, "nemotron/README.md", k, NEMOTRON_15B, prec, "h100-sxm-80gb",
                              [(16, 64, s15, x15, m15)], 4096, 2, 1, 1, 1, 2, extra=NEMOTRON_NOTES)
        cases += weak_scaling(t, c, "nemotron/README.md", k, NEMOTRON_340B, prec, "h100-sxm-80gb",
                              [(256, 64, s340, x340, m340)], 4096, 8, 8, 12, 1, 1, recompute="selective", extra=n340)
    for prec, steps, toks, mfus in (
            ("bf16", [2.189, 2.19, 2.229], [59877, 119700, 235212], [40.2, 40.2, 39.4]),
            ("fp8", [1.483, 1.517, 1.549], [88383, 172804, 338468], [29.7, 28.9, 28.4])):
        rows = [(g, b, s, x, m) for (g, b), s, x, m in zip([(128, 32), (256, 64), (512, 128)], steps, toks, mfus)]
        cases += weak_scaling(t, c, "nemotron/README.md", k, NEMOTRON_340B, prec, "gb200", rows, 4096, 8, 4, 12, 1,
                              1, recompute="selective", extra=n340)
    for prec, steps, toks, mfus in (
            ("bf16", [32.66, 16.58, 8.468], [64211, 126486, 247656], [43.0, 42.4, 41.5]),
            ("fp8", [21.83, 11.21, 5.668], [96067, 187078, 369998], [32.2, 31.4, 31.0])):
        rows = [(g, 512, s, x, m) for g, s, x, m in zip([128, 256, 512], steps, toks, mfus)]
        for case in weak_scaling(t, c, "nemotron/README.md (strong scaling)", k, NEMOTRON_340B, prec, "gb200", rows,
                                 4096, 8, 4, 12, 1, 1, recompute="selective", extra=n340):
            case["id"] += "-gbs512"
            case["source"] = case["source"].replace("gpu]", "gpu-gbs512]")
            cases.append(case)
    t, c = "v25p05p05", "c5c765f"
    for prec, s, x, m in (("bf16", 19.810, 105863, 55.34), ("fp8", 13.020, 161072, 42.12)):
        cases += weak_scaling(t, c, "llama3.1/README.md", k, LLAMA31_405B, prec, "h100-sxm-80gb",
                              [(512, 256, s, x, m)], 8192, 8, 8, 8, 2, 1)
    return cases


FMS_MODELS = {
    "7b": {"name": "Llama-2-7B (fms llama2_7b)", "arch": "llama", "layers": 32, "hidden": 4096, "heads": 32,
           "kv_heads": 32, "ffn_hidden": 11008, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
    "13b": {"name": "Llama-2-13B (fms llama2_13b)", "arch": "llama", "layers": 40, "hidden": 5120, "heads": 40,
            "kv_heads": 40, "ffn_hidden": 13824, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
    "34b": {"name": "Llama-2-34B (fms llama2_34b)", "arch": "llama", "layers": 48, "hidden": 8192, "heads": 64,
            "kv_heads": 8, "ffn_hidden": 22016, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
    "70b": {"name": "Llama-2-70B (fms llama2_70b)", "arch": "llama", "layers": 80, "hidden": 8192, "heads": 64,
            "kv_heads": 8, "ffn_hidden": 28672, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
}
FMS_AC = {"No AC": "none", "Full AC": "full", "Selective AC": "selective", "False": "none", "True": "full"}


def fms_case(commit, compiled, size, strategy, ac, gpu, tok_s_gpu, mfu, batch=2):
    """One cell of IBM fms-fsdp's README throughput table (seq 4096, no gradient accumulation)."""
    a100 = gpu.startswith("a100")
    gpus, node_gbit = (128, 400) if a100 else (96, 800)
    hsdp = strategy == "HSDP"
    table = "compile" if compiled else ("eager-2024-02" if commit == "6dc80d2" else "eager")
    cid = f"fms-fsdp-{table}-{size}-{gpu.split('-')[0]}-{gpus}gpu"
    unc = [f"README states {node_gbit} Gbps for the cluster; read as per node, so {node_gbit // 8} Gb/s per GPU",
           "seq_len 4096 and vocab 32000 from fms_fsdp/config/training.py defaults, not in the table",
           f"global_batch = batch size {batch} x gpus (fms-fsdp has no gradient accumulation)",
           "FSDP here is PyTorch FSDP1 (FullyShardedDataParallel), not FSDP2",
           "mfu_pct = published MFU fraction x 100" if mfu is not None else
           "published 'MFU' of this table counts recomputed FLOPs (PyTorch FLOP counter, checkpointing on): "
           "mfu_pct left null",
           "GPU variant not stated; SXM assumed"]
    if hsdp:
        unc.append("HSDP sharding group assumed to be one 8-GPU node (fms-fsdp default sharding_group_size)")
    if ac == "True":
        unc.append("'Activation Checkpointing: True' with selective_checkpointing=1 (config default) = every block")
    if ac == "Selective AC":
        unc.append("fms 'Selective AC' wraps a fraction p of whole blocks in activation checkpointing "
                   "(fms_fsdp/policies/ac_handler.py); p is not published; encoded as selective")
    if size == "13b":
        unc.append("kv_heads = heads: llama2_13b config sets no kvheads (multi-head attention)")
    return {
        "id": cid,
        "source": f"foundation-model-stack/fms-fsdp README.md @ {commit}, 'Training throughput benchmarks' "
                  f"({'compiled' if compiled else 'eager'} table) [gt:{cid}]",
        "framework": "fms-fsdp", "model": dict(FMS_MODELS[size]), "seq_len": 4096, "gpu": {"name": gpu},
        "gpus": gpus, "gpus_per_node": 8, "inter_node_bw_gbit_per_gpu": node_gbit // 8,
        "parallelism": {"dp_replicate": gpus // 8 if hsdp else 1, "dp_shard": 8 if hsdp else gpus, "tp": 1, "pp": 1,
                        "vpp": 1, "cp": 1, "sequence_parallel": False, "pp_schedule": "none",
                        "data_parallel": "hsdp" if hsdp else "fsdp_full_shard"},
        "micro_batch": batch, "global_batch": batch * gpus, "recompute": FMS_AC[ac], "precision": "bf16",
        "compiled": compiled,
        "measured": {"tokens_per_s_per_gpu": float(tok_s_gpu),
                     "mfu_pct": None if mfu is None else round(mfu * 100, 1),
                     "peak_memory_gib": None, "step_time_s": None},
        "uncertain": unc,
    }


def fms_fsdp():
    """fms-fsdp README: eager tables @6dc80d2 (Feb 2024) and @4ffb9bd (Mar 2024), torch.compile table @5a296af."""
    cases = []
    for commit, compiled, rows in (
            ("4ffb9bd", False, [("7b", "HSDP", "No AC", 3700, 7500, 0.57, 0.37),
                                ("13b", "FSDP", "Selective AC", 1800, 3800, 0.51, 0.35),
                                ("34b", "FSDP", "Full AC", 700, 1550, 0.47, 0.32),
                                ("70b", "FSDP", "Full AC", 370, 800, 0.50, 0.34)]),
            ("5a296af", True, [("7b", "HSDP", "No AC", 4550, 9600, 0.68, 0.46),
                               ("13b", "FSDP", "Selective AC", 2150, 4850, 0.61, 0.43),
                               ("34b", "FSDP", "Selective AC", 820, 1830, 0.55, 0.38),
                               ("70b", "FSDP", "Selective AC", 410, 890, 0.55, 0.38)])):
        for size, strat, ac, a100, h100, mfu_a, mfu_h in rows:
            cases.append(fms_case(commit, compiled, size, strat, ac, "a100-sxm-80gb", a100, mfu_a))
            cases.append(fms_case(commit, compiled, size, strat, ac, "h100-sxm-80gb", h100, mfu_h))
    # Feb-2024 table @6dc80d2: other batch sizes and checkpointing choices (MFU of checkpointed rows is an HFU).
    for size, strat, ac, batch, a100, h100, mfu_a, mfu_h in (("7b", "HSDP", "False", 2, 3760, 7500, 0.56, 0.36),
                                                             ("13b", "HSDP", "False", 1, 1700, 3700, 0.48, 0.34),
                                                             ("34b", "FSDP", "True", 8, 772, 1700, None, None),
                                                             ("70b", "FSDP", "True", 6, 380, 850, None, None)):
        cases.append(fms_case("6dc80d2", False, size, strat, ac, "a100-sxm-80gb", a100, mfu_a, batch))
        cases.append(fms_case("6dc80d2", False, size, strat, ac, "h100-sxm-80gb", h100, mfu_h, batch))
    return cases


GPT3_5B = {"name": "GPT-3 5B (NeMo)", "arch": "gpt", "layers": 24, "hidden": 4096, "heads": 32, "kv_heads": 32,
           "ffn_hidden": 16384, "ffn_kind": "gelu", "vocab": 51200, "tied_embeddings": True}
GPT3_20B = {"name": "GPT-3 20B (NeMo)", "arch": "gpt", "layers": 44, "hidden": 6144, "heads": 48, "kv_heads": 48,
            "ffn_hidden": 24576, "ffn_kind": "gelu", "vocab": 51200, "tied_embeddings": True}
LLAMA2 = {
    "7b": {"name": "Llama-2-7B", "arch": "llama", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32,
           "ffn_hidden": 11008, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
    "13b": {"name": "Llama-2-13B", "arch": "llama", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40,
            "ffn_hidden": 13824, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
    "70b": {"name": "Llama-2-70B", "arch": "llama", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
            "ffn_hidden": 28672, "ffn_kind": "swiglu", "vocab": 32000, "tied_embeddings": False},
}
NEMOTRON_8B = {"name": "Nemotron-3 8B (NeMo nemotron_8b)", "arch": "llama", "layers": 32, "hidden": 4096,
               "heads": 32, "kv_heads": 32, "ffn_hidden": 16384, "ffn_kind": "squared_relu", "vocab": 256000,
               "tied_embeddings": False}
NEMOTRON_22B = {"name": "Nemotron 22B (NeMo nemotron_22b)", "arch": "llama", "layers": 40, "hidden": 6144,
                "heads": 48, "kv_heads": 48, "ffn_hidden": 24576, "ffn_kind": "squared_relu", "vocab": 256000,
                "tied_embeddings": False}
GPT_VOCAB = "vocab 51200 (GPT-2 BPE 50257 padded), as in the visible file's GPT-3 cases; NeMo pads to 128*TP"
NEMO_MODEL_SRC = ("model dims from NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training (gpt3, nemotron) "
                  "@26e42fa9 and the public Llama configs; the table gives only the name")

# (name, model, gpus, gbs, mbs, seq, tp, pp, cp, vp); tokens/s/GPU and model TFLOP/s/GPU per release below.
NEMO_ROWS = [("gpt3-5b", GPT3_5B, 64, 2048, 4, 2048, 1, 1, 1, 1), ("gpt3-20b", GPT3_20B, 64, 256, 2, 2048, 2, 1, 1, 1),
             ("gpt3-175b", GPT3_175B, 128, 256, 1, 2048, 4, 8, 1, 6),
             ("gpt3-175b", GPT3_175B, 512, 2048, 2, 2048, 4, 8, 1, 6),
             ("llama2-7b", LLAMA2["7b"], 8, 128, 1, 4096, 1, 1, 1, 1),
             ("llama2-13b", LLAMA2["13b"], 16, 128, 1, 4096, 1, 4, 1, 10),
             ("llama2-70b", LLAMA2["70b"], 64, 128, 1, 4096, 4, 4, 1, 20),
             ("nemotron-8b", NEMOTRON_8B, 64, 256, 4, 4096, 2, 1, 1, 1),
             ("nemotron-22b", NEMOTRON_22B, 64, 256, 2, 4096, 2, 4, 1, 10),
             ("nemotron4-340b", NEMOTRON_340B, 128, 32, 1, 4096, 8, 8, 1, 12),
             ("llama3-8b", LLAMA31_8B, 8, 128, 1, 8192, 1, 1, 2, 1),
             ("llama3-70b", LLAMA31_70B, 64, 128, 1, 8192, 4, 4, 2, 5)]
NEMO_RELEASES = [  # commit, date, [(tokens/s/GPU, model TFLOP/s/GPU)] in NEMO_ROWS order
    ("141aa8e2f4", "2024-08-21", [(23574, 770), (5894, 755), (745, 802), (832, 895), (16634, 767), (8715, 760),
                                  (1717, 763), (12507, 643), (4289, 559), (328, 691), (11883, 688), (1549, 746)]),
    ("08264fe348", "2024-09-14", [(22521, 736), (5851, 750), (726, 782), (782, 842), (16847, 776), (8646, 754),
                                  (1707, 759), (12701, 653), (4256, 554), (322, 678), (12036, 697), (1533, 738)]),
    ("35029a0c84", "2024-10-08", [(23406, 765), (5851, 750), (716, 771), (825, 888), (16934, 780), (8715, 760),
                                  (1728, 768), (12507, 643), (4312, 562), (326, 686), (12273, 711), (1524, 734)]),
]


def nemo_summary_case(commit, date, row, tok_s_gpu, tflops):
    """One row of NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, FP8)."""
    name, model, gpus, gbs, mbs, seq, tp, pp, cp, vp = row
    cid = f"nemo-perf-{date}-{name}-fp8-h100-{gpus}gpu"
    unc = [NEMO_MODEL_SRC, H100_NET, OPT_NOTE, RECOMP_NONE, FP8_NOTE,
           f"published Model TFLOP/s/GPU = {tflops} (not an MFU; mfu_pct left null)"]
    if tp > 1:
        unc.append(SP_NOTE)
    if model["arch"] == "gpt":
        unc.append(GPT_VOCAB)
    if name == "llama3-8b" or name == "llama3-70b":
        unc.append("Llama 3 dims = Llama 3.1 (same shapes; 8k sequence as printed)")
    if name == "nemotron4-340b":
        unc = unc[:3] + ["recompute not stated; none assumed (the dgxc 340B cases use selective)"] + unc[4:]
    return {
        "id": cid,
        "source": f"NVIDIA/NeMo docs/source/performance/performance_summary.md @{commit} ({date}; NeMo 24.07 "
                  f"container, DGX-H100, FP8), pre-training table [gt:{cid}]",
        "framework": "nemo", "model": dict(model), "seq_len": seq, "gpu": {"name": "h100-sxm-80gb"}, "gpus": gpus,
        "gpus_per_node": 8, "inter_node_bw_gbit_per_gpu": 400,
        "parallelism": {"dp_replicate": 1, "dp_shard": gpus // (tp * pp * cp), "tp": tp, "pp": pp,
                        "vpp": vp if pp > 1 else 1, "cp": cp, "sequence_parallel": tp > 1,
                        "pp_schedule": ("interleaved_1f1b" if vp > 1 else "1f1b") if pp > 1 else "none",
                        "data_parallel": "distributed_optimizer"},
        "micro_batch": mbs, "global_batch": gbs, "recompute": "none", "precision": "fp8", "compiled": False,
        "measured": {"tokens_per_s_per_gpu": float(tok_s_gpu), "mfu_pct": None, "peak_memory_gib": None,
                     "step_time_s": None},
        "uncertain": unc,
    }


def nemo_summary():
    """Every distinct measurement of the three NeMo 24.07 summary versions; a row re-published with the same
    numbers as an earlier version is the same measurement and is kept once."""
    cases, seen = [], set()
    for commit, date, values in NEMO_RELEASES:
        for row, (tok, tfl) in zip(NEMO_ROWS, values):
            key = (row[0], row[2], tok, tfl)
            if key in seen:
                continue
            seen.add(key)
            cases.append(nemo_summary_case(commit, date, row, tok, tfl))
    return cases


LAUNCHER_NOTE = ("configuration from the same commit's conf/training/gpt3/{size}.yaml (bf16, distributed_fused_adam"
                 "); the table does not restate it")


def launcher_case(size, model, nodes, tok_s, tp, pp, mbs, recompute, extra):
    """NVIDIA/NeMo-Framework-Launcher README 'Training Performance Results' (NeMo Megatron 22.08, DGX A100 80GB)."""
    gpus = nodes * 8
    cid = f"nemo-launcher-2022-gpt3-{size}-bf16-a100-{gpus}gpu"
    unc = [LAUNCHER_NOTE.format(size=size), PER_GPU,
           "global_batch 2048 from the yaml; the scaling table does not say whether it was held fixed",
           "inter_node_bw 200 Gb/s/GPU = DGX A100 SuperPOD (8x HDR 200 Gb/s per node), not restated",
           "NeMo Megatron 22.08-era stack (Apex/Megatron kernels, no Transformer Engine)", GPT_VOCAB] + list(extra)
    return {
        "id": cid,
        "source": f"NVIDIA/NeMo-Framework-Launcher README.md @3579cdb3 (2022-09), 'Training Performance Results' "
                  f"GPT-3 {size.upper()} table [gt:{cid}]",
        "framework": "nemo", "model": dict(model), "seq_len": 2048, "gpu": {"name": "a100-sxm-80gb"}, "gpus": gpus,
        "gpus_per_node": 8, "inter_node_bw_gbit_per_gpu": 200,
        "parallelism": {"dp_replicate": 1, "dp_shard": gpus // (tp * pp), "tp": tp, "pp": pp, "vpp": 1, "cp": 1,
                        "sequence_parallel": tp > 1, "pp_schedule": "1f1b" if pp > 1 else "none",
                        "data_parallel": "distributed_optimizer"},
        "micro_batch": mbs, "global_batch": 2048, "recompute": recompute, "precision": "bf16", "compiled": False,
        "measured": {"tokens_per_s_per_gpu": round(tok_s / gpus, 1), "mfu_pct": None, "peak_memory_gib": None,
                     "step_time_s": None},
        "uncertain": unc,
    }


def nemo_launcher():
    cases = []
    for nodes, tok in zip([1, 2, 4, 8, 16, 32], [40345, 79815, 161754, 312774, 659481, 1159288]):
        cases.append(launcher_case("5b", GPT3_5B, nodes, tok, 1, 1, 2, "none", [
            "yaml: activations_checkpoint_granularity full, method block, num_layers 0 = no block checkpointed; "
            "encoded as none"]))
    for nodes, tok in zip([8, 16, 32, 64, 128], [7500, 14950, 29537, 58211, 109684]):
        cases.append(launcher_case("175b", GPT3_175B, nodes, tok, 8, 8, 2, "selective", [
            "yaml: selective activation recompute, sequence_parallel true, no interleaving (no virtual stages)"]))
    return cases



def automodel():
    """NeMo AutoModel (PyTorch FSDP2) docs/performance-summary.mdx @36044ad, the one dense pre-training row."""
    cid = "automodel-llama3p1-70b-bf16-h100-64gpu"
    return [{
        "id": cid,
        "source": "NVIDIA-NeMo/Automodel docs/performance-summary.mdx @36044ad (DGX-H100, BF16, pre-training); "
                  "examples/llm_benchmark/llama3_3/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml same "
                  f"commit [gt:{cid}]",
        "framework": "automodel", "model": dict(LLAMA31_70B), "seq_len": 8192, "gpu": {"name": "h100-sxm-80gb"},
        "gpus": 64, "gpus_per_node": 8, "inter_node_bw_gbit_per_gpu": 400,
        "parallelism": {"dp_replicate": 1, "dp_shard": 32, "tp": 1, "pp": 1, "vpp": 1, "cp": 2,
                        "sequence_parallel": False, "pp_schedule": "none", "data_parallel": "fsdp_full_shard"},
        "micro_batch": 1, "global_batch": 128, "recompute": "full", "precision": "bf16", "compiled": True,
        "measured": {"tokens_per_s_per_gpu": 866.77, "mfu_pct": None, "peak_memory_gib": None, "step_time_s": 18.90},
        "uncertain": ["inter_node_bw 400 Gb/s/GPU = DGX H100 reference (NDR), not stated",
                      "recompute full from the yaml's activation_checkpointing: True (per block); compile from "
                      "enable_compile: True; FSDP2 prefetch on, reshard_after_forward true",
                      "Transformer Engine kernels (RMSNorm, Linear, attention) as the table's 'TE'; TE FusedAdam",
                      "published Model TFLOP/s/GPU = 389 (not an MFU; mfu_pct left null)",
                      "the yaml is read at the same commit as the table; the measurement date is not stated"],
    }]


def main():
    cases = (dgxc_v25p02() + dgxc_v25p04() + dgxc_v25p05() + fms_fsdp() + nemo_summary() +
             nemo_launcher() + automodel())
    ids = [c["id"] for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit(f"duplicate ids: {sorted(dup)}")
    json.dump({"format": "fsdpx-published-runs/1", "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
