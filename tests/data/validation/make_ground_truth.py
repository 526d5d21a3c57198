#!/usr/bin/env python3
"""Builds ground_truth_runs.json (fsdpx-published-runs/1) from published tables transcribed by hand (the
dgxc-benchmarking tables in ground_truth_dgxc.py, the others below).

Models: nothing; it only writes down published configurations and measurements, one case per table cell, with
every derived or assumed field named in the case's `uncertain`. Leaves out: MoE rows, fine-tuning/LoRA rows, and
any run whose configuration the source does not give. Sources and commits are named per table (see README.md).
Run: python3 tests/data/validation/make_ground_truth.py > tests/data/validation/ground_truth_runs.json
"""
import json
import sys

from ground_truth_dgxc import TABLES
from ground_truth_models import GPT3_175B, LLAMA31_70B, LLAMA31_8B, NEMOTRON_340B

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


def dgxc():
    """Every cell of ground_truth_dgxc.TABLES, one case per column and precision."""
    cases = []
    for t in TABLES:
        (tag, commit, container), (tp, pp, vp, cp, mbs) = t["release"], t["layout"]
        for precision, (steps, toks, mfus) in t["values"].items():
            rows = [(col[0], col[1], s, x, m) + tuple(col[2:]) for col, s, x, m in zip(t["cols"], steps, toks, mfus)]
            for case in weak_scaling(tag, commit, t["path"], container, t["model"], precision, t["gpu"], rows,
                                     t["seq"], tp, pp, vp, cp, mbs, t["recompute"], t["extra"]):
                old_id, case["id"] = case["id"], case["id"] + t["suffix"]
                case["source"] = case["source"].replace(f"[gt:{old_id}]", f"[gt:{case['id']}]")
                cases.append(case)
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
# The clusters the tables ran on: (GPUs, the figure printed for the network in Gbps, where it is printed). The eager
# tables' H100 cluster is the README header's and the March blog's ("an H100 cluster with 96 GPUs and 800Gbps
# inter-node interconnect": pytorch/pytorch.github.io _posts/2024-03-13-maximizing-training.md, "Throughput and MFU,
# HFU computation"). The compile table (README @ed74fd5, 2024-05-09) changed only the numbers and kept that header;
# its H100 MFU values (0.46/0.43/0.38/0.38) are the "MFU compile" column of the compile blog's Table 2, which says
# they were measured on "464 H100 80GB GPUs with 3.2Tbps internode interconnect" (_posts/2024-05-21-maximizing-
# training-throughput.md, "MFU report"). Both blogs put the A100 runs on 128 GPUs with 400 Gbps.
FMS_CLUSTER = {("a100", False): (128, 400, "the README header and the March blog"),
               ("h100", False): (96, 800, "the README header and the March blog"),
               ("a100", True): (128, 400, "the README header and the compile blog's Table 1"),
               ("h100", True): (464, 3200, "the compile blog's Table 2 (pytorch/pytorch.github.io _posts/"
                                "2024-05-21-maximizing-training-throughput.md), not the README header (96 GPUs, "
                                "800 Gbps, kept from the eager table when @3b1ce15/@ed74fd5 changed the numbers)")}
# Where each table was published and the PyTorch it ran (the blogs: "PyTorch nightlies post-2.2 release" for the
# eager tables, "as of PyTorch 2.3" for the compile table).
FMS_TABLE = {"6dc80d2": ("eager-2024-02", "PyTorch nightlies after the 2.2 release (March blog, 'Training Details')"),
             "4ffb9bd": ("eager", "PyTorch nightlies after the 2.2 release (March blog, 'Training Details')"),
             "ed74fd5": ("compile", "PyTorch 2.3 (compile blog: graph breaks 'as of PyTorch 2.3')")}


def fms_ac_share(mfu, hfu):
    """fms 'Selective AC' checkpoints whole blocks on a share p of them; recomputing a block's forward adds a third
    of its model FLOPs (forward 2N of 6N per token), so the table's HFU / MFU = 1 + p / 3 and p = 3 (HFU / MFU - 1),
    capped at 1. The same tables' Full-AC rows (p = 1) give 0.97-1.13 by this formula (rounding of two digits)."""
    return round(min(1.0, 3 * (hfu / mfu - 1)), 3)


def fms_every_nth_share(mfu, hfu):
    """Until fms-fsdp @b225161 (2024-03-21) 'selective_checkpointing' was an int n and ac_handler.py checkpointed
    every n-th block (`_count % every_xth_item == 0`), so the share is 1/n: the n nearest to the tables' HFU/MFU."""
    return round(1 / max(1, round(1 / fms_ac_share(mfu, hfu))), 3)


def fms_case(commit, compiled, size, strategy, ac, gpu, tok_s_gpu, mfu, batch=2, hfu=None):
    """One cell of IBM fms-fsdp's README throughput table (seq 4096, no gradient accumulation)."""
    a100 = gpu.startswith("a100")
    gpus, node_gbit, cluster_source = FMS_CLUSTER[(gpu.split("-")[0], compiled)]
    hsdp = strategy == "HSDP"
    table, torch_version = FMS_TABLE[commit]
    cid = f"fms-fsdp-{table}-{size}-{gpu.split('-')[0]}-{gpus}gpu"
    # The other readings of the figure: both directions of a node's links (half per direction), or a per-GPU
    # figure, at most the line rate of one NIC per GPU of the cluster the GPU comes in (HDR 200G on DGX A100,
    # NDR 400G on DGX H100: 800 Gbps exceeds a ConnectX-7 port).
    nic_line_gbit = 200 if a100 else 400
    unc = [f"{gpus} GPUs and {node_gbit} Gbps for the cluster from {cluster_source}; the figure read as per node, "
           f"so {node_gbit // 8} Gb/s per GPU",
           f"inter-node bandwidth between {node_gbit // 16} and {min(node_gbit, nic_line_gbit)} Gb/s per GPU: the "
           f"source's {node_gbit} Gbps does not say per node or per GPU, one direction or both ({node_gbit} / 8 / 2 "
           f"if a node's two directions are counted; per GPU at most one {nic_line_gbit}G NIC's line rate)",
           "seq_len 4096 and vocab 32000 from fms_fsdp/config/training.py defaults, not in the table",
           f"global_batch = batch size {batch} x gpus (fms-fsdp has no gradient accumulation)",
           "FSDP here is PyTorch FSDP1 (FullyShardedDataParallel), not FSDP2",
           f"torch: {torch_version}",
           "tokens/s/GPU = batch x 4096 / step time as fms_fsdp/utils/train_utils.py reports it (packed lines, no "
           "padding): the mean step time of the last report_interval steps, or 'overall' since the loop's start "
           "(first steps, lazy NCCL set-up and, compiled, compilation included); which one the table quotes is "
           "not said",
           "mfu_pct = published MFU fraction x 100" if mfu is not None else
           "published 'MFU' of this table counts recomputed FLOPs (PyTorch FLOP counter, checkpointing on): "
           "mfu_pct left null",
           "GPU variant not stated; SXM assumed"]
    if hsdp:
        unc.append("HSDP sharding group assumed to be one 8-GPU node (fms-fsdp default sharding_group_size)")
    if ac == "True":
        unc.append("'Activation Checkpointing: True' with selective_checkpointing=1 (config default) = every block")
    recompute = {"recompute": FMS_AC[ac]}
    if ac == "Selective AC" and commit == "4ffb9bd":
        share = fms_every_nth_share(mfu, hfu)
        recompute = {"recompute": "full", "recompute_fraction": share}
        unc.append("fms 'Selective AC' before @b225161 (2024-03-21; this table was measured by @5e522b4, 2024-03-13, "
                   "the March blog: 'checkpoint every n blocks') wraps every n-th block in full activation "
                   "checkpointing (fms_fsdp/policies/ac_handler.py, int selective_checkpointing); n is not published: "
                   f"p = 1/n = {share}, the n nearest to 3 x (HFU / MFU - 1) = {fms_ac_share(mfu, hfu)} from the same "
                   f"table's HFU {hfu} and MFU {mfu}")
    elif ac == "Selective AC":
        share = fms_ac_share(mfu, hfu)
        recompute = {"recompute": "full", "recompute_fraction": share}
        unc.append("fms 'Selective AC' wraps a share p of whole blocks in full activation checkpointing "
                   "(fms_fsdp/policies/ac_handler.py); p is not published: p = 3 x (HFU / MFU - 1) = "
                   f"{share} from the same table's HFU {hfu} and MFU {mfu} (a recomputed forward adds a third of "
                   "the model FLOPs; the table's Full-AC rows give 0.97-1.13 by this formula)")
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
        "micro_batch": batch, "global_batch": batch * gpus, **recompute, "precision": "bf16",
        "compiled": compiled,
        "measured": {"tokens_per_s_per_gpu": float(tok_s_gpu),
                     "mfu_pct": None if mfu is None else round(mfu * 100, 1),
                     "peak_memory_gib": None, "step_time_s": None},
        "uncertain": unc,
    }


def fms_fsdp():
    """fms-fsdp README: eager tables @6dc80d2 (Feb 2024) and @4ffb9bd (= @5e522b4, Mar 2024), torch.compile table
    @ed74fd5 (May 2024; unchanged to @5a296af)."""
    cases = []
    for commit, compiled, rows in (
            # size, sharding, AC, tokens/s/GPU A100 and H100, (MFU, HFU) A100 and H100
            ("4ffb9bd", False, [("7b", "HSDP", "No AC", 3700, 7500, (0.57, 0.57), (0.37, 0.37)),
                                ("13b", "FSDP", "Selective AC", 1800, 3800, (0.51, 0.59), (0.35, 0.40)),
                                ("34b", "FSDP", "Full AC", 700, 1550, (0.47, 0.64), (0.32, 0.44)),
                                ("70b", "FSDP", "Full AC", 370, 800, (0.50, 0.67), (0.34, 0.45))]),
            ("ed74fd5", True, [("7b", "HSDP", "No AC", 4550, 9600, (0.68, 0.68), (0.46, 0.46)),
                               ("13b", "FSDP", "Selective AC", 2150, 4850, (0.61, 0.69), (0.43, 0.46)),
                               ("34b", "FSDP", "Selective AC", 820, 1830, (0.55, 0.74), (0.38, 0.49)),
                               ("70b", "FSDP", "Selective AC", 410, 890, (0.55, 0.74), (0.38, 0.47))])):
        for size, strat, ac, a100, h100, (mfu_a, hfu_a), (mfu_h, hfu_h) in rows:
            cases.append(fms_case(commit, compiled, size, strat, ac, "a100-sxm-80gb", a100, mfu_a, hfu=hfu_a))
            cases.append(fms_case(commit, compiled, size, strat, ac, "h100-sxm-80gb", h100, mfu_h, hfu=hfu_h))
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
    cases = dgxc() + fms_fsdp() + nemo_summary() + nemo_launcher() + automodel()
    ids = [c["id"] for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit(f"duplicate ids: {sorted(dup)}")
    json.dump({"format": "fsdpx-published-runs/1", "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
