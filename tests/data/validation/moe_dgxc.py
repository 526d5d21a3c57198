"""The dgxc-benchmarking MoE tables behind moe_runs.json, transcribed cell by cell (NVIDIA/dgxc-benchmarking).

Models: nothing; data only. Each table: release tag, commit, README path, container, model, GPU, sequence length,
and one column per run: (gpus, layers, tp, pp, vp, cp, ep, etp, micro-batch, global batch) from the README's
configuration table, then per precision the printed step time (s), aggregate tokens/s and MFU (%).
Leaves out releases whose numbers repeat an earlier one (named in REPEATS) and releases without measurements
(v25.07 on print only configurations).
"""
from moe_models import DEEPSEEK_V3, DEEPSEEK_V3_NOTES, GROK1, GROK1_NOTES

H100, GB200 = "h100-sxm-80gb", "gb200"

# Releases whose tables equal an earlier one, cell for cell (kept once, under the earlier tag).
REPEATS = {
    "v24.11.1 grok1/README_314b.md": "v25.01, v25.01.1",
    "v25.02 grok1/README_314b.md": "v25.02.01, v25.02.02, v25.03, v25.04, v25.04.01, v25.04.02",
    "v25.05 grok1/README.md": "GB200 tables of v25.05.01 to v25.05.05",
    "v25.05.02 grok1/README.md": "v25.05.03 to v25.05.05 (H100 table)",
    "v25.05 deepseek_v3/pretraining/README.md": "v25.05.01 to v25.05.05 (GB200 and the 1024-GPU H100 column)",
}

# Grok-1 before v25.05: seq 4096 up to 32 GPUs, reduced-depth proxies below 512 GPUs; ETP not printed.
GROK_OLD_COLS = [(8, 2, 4, 1, 1, 1, 2, 4, 1, 1024, 4096), (16, 4, 4, 1, 1, 1, 4, 4, 1, 1024, 4096),
                 (32, 4, 4, 1, 1, 1, 8, 4, 1, 1024, 4096), (64, 8, 4, 1, 1, 2, 8, 4, 1, 1024, 8192),
                 (128, 16, 4, 2, 8, 2, 8, 4, 1, 1024, 8192), (256, 32, 4, 4, 8, 2, 8, 4, 1, 1024, 8192),
                 (512, 64, 4, 8, 8, 2, 8, 4, 1, 1024, 8192), (1024, 64, 4, 8, 8, 2, 8, 4, 1, 2048, 8192),
                 (2048, 64, 4, 8, 8, 2, 8, 4, 1, 4096, 8192)]
GROK_OLD_NOTES = [
    "etp = tp = 4: the table prints no ETP; its DP column equals data-parallel / EP (expert data-parallel with the "
    "experts split over TP, Megatron-Core before parallel folding), so experts are read as tensor-parallel over TP",
    "the table's GA column (128) does not match GBS / (MBS x data-parallel) at 8 and 16 GPUs; global batch as "
    "printed, accumulation derived from it",
    "token dispatcher alltoall, capacity factor 1.0 with padding to capacity (token drop), grouped GEMM off, "
    "recompute none, distributed optimizer with overlapped grad/param sync: from grok1/grok1_314b.yaml at the "
    "same release",
]
GROK_NEW_NOTES = [
    "token dispatcher, capacity factor, grouped GEMM not stated (NeMo 25.04 scripts.performance Grok-1 recipe)",
    "recompute not stated; none assumed",
    "vocab assumed the same Llama-3 tokenizer as the earlier releases' yaml (the launch script does not name one)",
]
# (gpus, layers, tp, pp, vp, cp, ep, etp, mbs, gbs, seq)
GROK_GB200_COLS = [(128, 64, 4, 1, 1, 1, 8, 4, 1, 256, 8192), (256, 64, 4, 1, 1, 1, 8, 4, 1, 512, 8192),
                   (512, 64, 4, 1, 1, 1, 8, 4, 1, 1024, 8192)]
GROK_H100_COLS = [(512, 64, 4, 8, 8, 2, 8, 1, 1, 1024, 8192)]
DSV3_SEL_H100 = ["recompute selective = the launch script's --recompute_modules mla_up_proj (that module only)"]
DSV3_SEL_GB200 = ["recompute selective = the launch script's --recompute_modules core_attn (that module only)"]
DSV3_NOTES = DEEPSEEK_V3_NOTES + [
    "token dispatcher (alltoall or DeepEP), capacity factor / token drop and MTP not stated in README or launch "
    "script (NeMo 25.04.01 scripts.performance.llm.pretrain_deepseek_v3 defaults)",
]


def table(release, path, model, gpu, cols, values, recompute="none", extra=(), moe_extra=None):
    return {"release": release, "path": path, "model": model, "gpu": gpu, "cols": cols, "values": values,
            "recompute": recompute, "extra": list(extra), "moe_extra": dict(moe_extra or {})}


TABLES = [
    table(("v24p11p1", "35a9aec", "NeMo dev container (FW 24.09)"), "grok1/README_314b.md", GROK1, H100,
          GROK_OLD_COLS, {
              "bf16": ([24.03, 21.52, 10.64, 20.64, 20.64, 20.7, 20.83, 21, 21.09],
                       [174544, 194903, 394202, 406425, 406425, 405247, 402718, 798915, 1591011],
                       [45.4, 44.9, 45.4, 44.5, 43.0, 42.1, 41.5, 41.1, 41.0]),
              "fp8": ([19.89, 17.08, 8.3, 16.21, 16.48, 16.55, 16.69, 16.89, 17.04],
                      [210875, 245568, 505338, 517496, 509017, 506865, 502613, 993322, 1969157],
                      [27.4, 28.3, 29.1, 28.3, 26.9, 26.3, 25.9, 25.6, 25.3])},
          extra=GROK1_NOTES + GROK_OLD_NOTES, moe_extra={"capacity_factor": 1.0}),
    table(("v25p02", "8f5cbb3", "NeMo 24.12"), "grok1/README_314b.md", GROK1, H100, GROK_OLD_COLS, {
        "bf16": ([24.00, 21.71, 10.70, 21.42, 20.73, 20.83, 21.01, 21.20, 21.29],
                 [174762, 193223, 391991, 391606, 404699, 402756, 399191, 791378, 1576065],
                 [45.4, 44.5, 45.1, 42.9, 42.8, 41.8, 41.09, 40.73, 40.56]),
        "fp8": ([19.71, 17.80, 8.70, 17.53, 16.70, 16.75, 16.90, 17.01, 17.30],
                [212757, 235635, 482159, 478583, 502311, 500752, 496367, 981295, 1939562],
                [27.7, 27.1, 27.7, 26.2, 26.6, 26.0, 25.53, 25.24, 24.94])}, extra=GROK1_NOTES + GROK_OLD_NOTES,
          moe_extra={"capacity_factor": 1.0}),
    table(("v25p05", "68eaf7e", "NeMo 25.04.00"), "grok1/README.md", GROK1, GB200, GROK_GB200_COLS, {
        "bf16": ([7.325, 7.39, 7.324], [286300.61, 567564.82, 572679], [47.59, 47.17, 47.6]),
        "fp8": ([5.298, 5.224, 5.193], [395838.43, 802891.27, 807684], [32.90, 33.36, 33.6])},
          extra=GROK1_NOTES + GROK_NEW_NOTES),
    table(("v25p05p01", "85d9284", "NeMo 25.04.00"), "grok1/README.md", GROK1, H100, GROK_H100_COLS, {
        "bf16": ([16.930], [495487.77], [51.00]), "fp8": ([13.454], [623502.90], [32.07])},
          extra=GROK1_NOTES + GROK_NEW_NOTES),
    table(("v25p05p02", "f041145", "NeMo 25.04.00"), "grok1/README.md", GROK1, H100, GROK_H100_COLS, {
        "bf16": ([15.933], [526493], [54.2]), "fp8": ([13.433], [624478], [32.2])},
          extra=GROK1_NOTES + GROK_NEW_NOTES + [
              "same configuration and container as v25.05.01's H100 column, re-measured (numbers differ)"]),
    table(("v25p05", "68eaf7e", "NeMo 25.04.01"), "deepseek_v3/pretraining/README.md", DEEPSEEK_V3, GB200,
          [(128, 61, 2, 4, 1, 1, 32, 1, 1, 1024, 4096), (256, 61, 2, 4, 1, 1, 64, 1, 1, 2048, 4096),
           (512, 61, 2, 4, 1, 1, 64, 1, 1, 4096, 4096)], {
              "bf16": ([34.168, 34.194, 34.274], [122755.33, 245323.97, 489502.71], [10.18, 10.17, 10.14])},
          "selective", DSV3_NOTES + DSV3_SEL_GB200),
    table(("v25p05", "68eaf7e", "NeMo 25.04.01"), "deepseek_v3/pretraining/README.md", DEEPSEEK_V3, H100,
          [(1024, 61, 2, 16, 1, 1, 64, 1, 1, 8192, 4096)], {"bf16": ([52.04], [644781.55], [16.55])},
          "selective", DSV3_NOTES + DSV3_SEL_H100),
    table(("v25p05p04", "6be5ea0", "NeMo 25.04.01"), "deepseek_v3/pretraining/README.md", DEEPSEEK_V3, H100,
          [(512, 61, 2, 8, 1, 1, 64, 1, 1, 4096, 4096)], {"bf16": ([48.948], [342755.90], [17.60])},
          "selective", DSV3_NOTES + DSV3_SEL_H100),
]
