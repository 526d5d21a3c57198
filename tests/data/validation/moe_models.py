"""Mixture-of-experts model shapes for make_moe_runs.py, in fsdpx's model-spec field names ("moe", "mla").

Models: the published architecture (layers, widths, heads, experts, router, latent attention) of each MoE model the
tables name, read from the model's config.json or the benchmark's own model yaml (each dict's comment names it).
Leaves out how a run was configured (make_moe_runs.py) and what the spec does not carry (YaRN, MTP layers).
"""

# deepseek-ai/DeepSeek-V3 config.json (tests/data/hf/deepseek-v3/config.json): 61 layers, the first 3 dense
# (first_k_dense_replace), 256 routed experts of 2048 + 1 shared, top-8 within 4 of 8 groups, sigmoid scores with
# the correction bias (noaux_tc), routed_scaling_factor 2.5, aux_loss_alpha 0.001; MLA q 1536 / kv 512, rope 64,
# nope 128, v 128 (head_dim 192 = 128 + 64). fsdpx counts 671,026,419,200 total / 37,552,297,472 active
# (card: 671B / 37B; the card's 685B adds the 14B multi-token-prediction module).
DEEPSEEK_V3 = {
    "name": "DeepSeek-V3", "arch": "llama", "layers": 61, "hidden": 7168, "heads": 128, "kv_heads": 128,
    "head_dim": 192, "ffn_hidden": 18432, "ffn_kind": "swiglu", "vocab": 129280, "tied_embeddings": False,
    "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128},
    "moe": {"experts": 256, "top_k": 8, "expert_ffn_hidden": 2048, "shared_experts": 1, "shared_ffn_hidden": 2048,
            "dense_layers": 3, "scoring": "sigmoid", "norm_topk_prob": True, "score_correction_bias": True,
            "groups": 8, "topk_groups": 4, "routed_scaling": 2.5, "aux_loss_coef": 0.001},
}
DEEPSEEK_V3_NOTES = [
    "model from deepseek-ai/DeepSeek-V3 config.json; the multi-token-prediction layer (num_nextn_predict_layers 1) "
    "is not in the spec: whether the recipe trains it (Megatron mtp_num_layers) is not stated",
    "YaRN rope scaling of the config left out (pre-training at 4096 tokens runs without it)",
    "aux_loss_coef = the config's aux_loss_alpha 0.001; the recipe's moe_aux_loss_coeff is not stated",
]

# Grok-1 as dgxc-benchmarking's grok1/grok1_314b.yaml (v24.11.1 to v25.04.02) sets it: 64 layers, hidden 6144,
# 48 heads, 8 query groups, ffn 32768 (fast-geglu), 8 experts top-2, RMSNorm, RoPE, untied, no biases, and the
# Llama-3 tokenizer (meta-llama/Meta-Llama-3-70B: 128,256 tokens, not xai-org/grok-1's 131,072). fsdpx counts
# 316,454,737,920 total / 84,526,503,936 active; "314B" is xAI's figure for its own release (tied embeddings,
# 131,072 tokens).
GROK1 = {
    "name": "Grok-1 314B (dgxc yaml, Llama-3 tokenizer)", "arch": "llama", "layers": 64, "hidden": 6144,
    "heads": 48, "kv_heads": 8, "ffn_hidden": 32768, "ffn_kind": "swiglu", "vocab": 128256,
    "tied_embeddings": False,
    "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 32768, "scoring": "softmax", "norm_topk_prob": True,
            "aux_loss_coef": 0.01},
}
GROK1_NOTES = [
    "ffn_kind swiglu stands for the yaml's fast-geglu (GELU-gated: same three matrices, same FLOPs per token)",
    "norm_topk_prob true: Megatron-Core's default router (softmax over the top-k logits, "
    "moe_router_pre_softmax false) assumed, not set in the yaml",
    "vocab 128256 = the yaml's Llama-3 tokenizer (NeMo pads it to a multiple of 128 x TP)",
]

# Qwen/Qwen3-30B-A3B config.json (tests/data/hf/qwen3-30b-a3b/config.json): 48 layers, hidden 2048, 32 heads,
# 4 KV heads of 128, per-head q/k RMSNorm, 128 experts of 768, top-8 renormalised, router_aux_loss_coef 0.001,
# vocabulary 151,936, untied. fsdpx counts 30,532,122,624 total / 3,353,032,704 active (card: 30.5B / 3.3B).
QWEN3_30B_A3B = {
    "name": "Qwen3-30B-A3B", "arch": "llama", "layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4,
    "head_dim": 128, "ffn_hidden": 6144, "ffn_kind": "swiglu", "vocab": 151936, "tied_embeddings": False,
    "qk_norm": True,
    "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 768, "scoring": "softmax", "norm_topk_prob": True,
            "aux_loss_coef": 0.001},
}
# Qwen/Qwen3-235B-A22B config.json as vLLM's test fixtures quote it (_QWEN3_MOE_CONFIG: 94 layers, 64 heads, 4 KV
# heads, hidden 4096, 128 experts of 1536, top-8, vocabulary 151,936); head_dim 128, q/k norms, renormalised top-k
# and aux 0.001 as the 30B card. fsdpx counts 235,093,634,560 total / 22,190,763,520 active (card: 235B / 22B).
QWEN3_235B_A22B = {
    "name": "Qwen3-235B-A22B", "arch": "llama", "layers": 94, "hidden": 4096, "heads": 64, "kv_heads": 4,
    "head_dim": 128, "ffn_hidden": 12288, "ffn_kind": "swiglu", "vocab": 151936, "tied_embeddings": False,
    "qk_norm": True,
    "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 1536, "scoring": "softmax", "norm_topk_prob": True,
            "aux_loss_coef": 0.001},
}
