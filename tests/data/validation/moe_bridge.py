"""Megatron-Bridge's MoE pre-training rows behind moe_runs.json, transcribed cell by cell.

Models: nothing; data only. Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md and
docs/performance-summary-archive.md at v0.6.0 (51885cf), which hold every release table from the 25.09 to the
26.08 NeMo container. One row per printed cell: (container, system, model, gpus, precision, gbs, mbs, seq, fsdp,
tp, pp, cp, vp, ep, tokens/s/GPU, model TFLOP/s/GPU, label). Kept: DeepSeek-V3 and Qwen3 MoE rows on DGX-H100,
DGX-B200 and DGX-GB200 in BF16, FP8 and FP8-CS (for 25.09, which prints no precision column, the primary value as
the visible fp8 file reads it). Left out: MXFP8, FP8-MX and NVFP4 rows (block-scaled formats fsdpx has no
precision for), parenthesised alternatives, GB300 and B300 systems (no fsdpx GPU), GPT-OSS (attention sinks,
sliding windows and biases not in fsdpx's spec), Kimi-K2 (MXFP8 on GB300 only), Nemotron-3 (hybrid Mamba).
"""
from moe_models import DEEPSEEK_V3, DEEPSEEK_V3_NOTES, QWEN3_235B_A22B, QWEN3_30B_A3B

COMMIT = "51885cf"
MODELS = {"dsv3": (DEEPSEEK_V3, DEEPSEEK_V3_NOTES), "q30": (QWEN3_30B_A3B, []), "q235": (QWEN3_235B_A22B, [])}
SYSTEMS = {"DGX-H100": "h100-sxm-80gb", "DGX-B200": "b200-180gb", "DGX-GB200": "gb200"}
# Release notes printed under the tables (the footnote "In MoE training benchmarks, we force-balance the token
# distribution among experts and all benchmarks are token-dropless" appears under these containers' tables).
BALANCED = {"25.11", "26.02", "26.02.01", "26.04", "26.04.01"}
VP_NA = 1  # "n/a" in the VP column: no virtual pipeline

# container, system, model, gpus, precision, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep, tok/s/GPU, TFLOP/s, label
ROWS = [
    ("25.09", "DGX-GB200", "dsv3", 256, "FP8", 2048, 1, 4096, 0, 1, 4, 1, 4, 64, 3454, 899, "tokendrop"),
    ("25.09", "DGX-GB200", "q30", 8, "FP8", 512, 4, 4096, 0, 1, 1, 1, 1, 8, 22775, 524, "tokendrop"),
    ("25.09", "DGX-GB200", "q235", 64, "FP8", 1024, 1, 4096, 0, 2, 1, 1, 1, 64, 4452, 659, "tokendrop"),
    ("25.09", "DGX-B200", "dsv3", 256, "FP8", 2048, 1, 4096, 0, 1, 16, 1, 1, 8, 2265, 589, "tokendrop"),
    ("25.09", "DGX-B200", "q30", 8, "FP8", 512, 1, 4096, 0, 1, 1, 1, 1, 8, 18066, 416, "tokendrop"),
    ("25.09", "DGX-B200", "q235", 64, "FP8", 1024, 1, 4096, 0, 1, 8, 1, 2, 8, 4104, 607, "tokendrop"),
    ("25.09", "DGX-H100", "dsv3", 1024, "FP8", 8192, 1, 4096, 0, 2, 8, 1, 4, 64, 1297, 338, "dropless"),
    ("25.09", "DGX-H100", "q30", 16, "FP8", 512, 2, 4096, 0, 1, 2, 1, 24, 8, 10494, 241, "tokendrop"),
    ("25.09", "DGX-H100", "q235", 256, "FP8", 2048, 1, 4096, 0, 2, 8, 1, 4, 32, 1204, 178, "tokendrop"),
    ("25.11", "DGX-GB200", "dsv3", 256, "BF16", 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 3139, 782, "w/o MTP"),
    ("25.11", "DGX-GB200", "q235", 256, "BF16", 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 4916, 728, ""),
    ("25.11", "DGX-H100", "q30", 16, "FP8-CS", 512, 2, 4096, 0, 1, 2, 1, 24, 8, 5275, 121, ""),
    ("25.11", "DGX-H100", "q235", 256, "FP8-CS", 2048, 1, 4096, 0, 2, 8, 1, 4, 32, 1575, 233, ""),
    ("26.02", "DGX-H100", "q30", 16, "FP8", 1024, 1, 4096, 0, 1, 2, 1, 12, 8, 5113, 118, ""),
    ("26.02", "DGX-H100", "q235", 256, "FP8", 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1633, 242, ""),
    ("26.02.01", "DGX-H100", "q30", 16, "FP8", 1024, 1, 4096, 0, 1, 2, 1, 12, 8, 9058, 208, ""),
    ("26.02.01", "DGX-H100", "q235", 256, "FP8", 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1611, 238, ""),
    ("26.04", "DGX-H100", "q30", 16, "FP8", 1024, 1, 4096, 0, 1, 1, 1, VP_NA, 16, 8901, 205, ""),
    ("26.04", "DGX-H100", "q235", 256, "FP8", 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1686, 250, ""),
    ("26.04.01", "DGX-H100", "q30", 16, "FP8", 1024, 1, 4096, 0, 1, 1, 1, VP_NA, 16, 8960, 206, ""),
    ("26.04.01", "DGX-H100", "q235", 256, "FP8", 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1712, 253, ""),
    # 26.06 prints no FSDP column.
    ("26.06", "DGX-H100", "q30", 16, "FP8", 1024, 1, 4096, None, 1, 1, 1, VP_NA, 16, 8826, 203, ""),
]
