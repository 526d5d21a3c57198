// cost_models/op_sac.h — torchtitan's op-level selective activation checkpointing (selective_ac_option
// = "op"): inside each checkpointed block it saves the outputs of aten.mm, of SDPA (flash / efficient)
// and of the functional reduce-scatter, except every second mm counted per block, and recomputes
// everything else (torchtitan/parallelisms/parallelize_llama.py @004b3148, _save_list and
// _apply_ac_to_transformer_block). This file lists a block's matmuls in that count order and the work
// recomputed before backward. Leaves out float8's saved amax (aten.max) and torch.compile's fusion.
#pragma once

#include <string>
#include <vector>

#include "core/model_spec.h"
#include "cost_models/compute.h"

namespace fsdpx {

// One aten.mm of a block on one rank, in forward order.
struct BlockMatmul {
  std::string name;      // "wq", "wk", "wv", "wqkv", "wo", "w1", "w3", "w2"
  std::string kernel;    // the compute_block.cpp GEMM it is part of: "qkv", "attn_out", "mlp_up", "mlp_down"
  double in_cols = 0;    // reduction dimension per rank (h, or q_dim / t and ffn / t for row-parallel)
  double out_cols = 0;   // output columns per token on this rank (column-parallel: width / t)
  bool row_parallel = false;  // wo, w2: output is the full hidden width (partial sums before the TP reduction)
  bool saved = false;         // odd position in the per-block mm count (1st, 3rd, ...)
};

// Llama (torchtitan's Attention/FeedForward): wq, wk, wv, wo, w1, w3, w2 (SwiGLU) or w1, w2; GPT:
// one fused wqkv, wo, up, (gate,) down. KV widths follow compute.h's rule (one KV head per rank at least).
std::vector<BlockMatmul> op_sac_matmuls(const ModelSpec& m, int tp);

// Kernels re-run before the block's backward under op-level SAC, in forward order: the norms, RoPE,
// the unsaved matmuls before the block's last one (the recompute stops early after the last tensor
// backward needs, torch.utils.checkpoint's default early stop, so a last unsaved matmul feeding only
// the residual add is skipped), the attention residual add and the MLP activation. The attention core
// is not re-run (SDPA's output and log-sum-exp are saved).
std::vector<KernelWork> op_sac_recompute_kernels(const ModelSpec& m, const LayerShape& s);

}  // namespace fsdpx
