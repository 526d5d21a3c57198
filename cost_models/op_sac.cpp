// cost_models/op_sac.cpp — the matmuls of a block in torchtitan's op-SAC count order and the kernels
// re-run before backward (see op_sac.h). Leaves out the FSDP/TP communication (program/segment_work.cpp).
#include "cost_models/op_sac.h"

#include <algorithm>

#include "core/errors.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {

namespace {

// Per-rank widths as compute_detail::rank_dims sizes them.
struct Widths {
  double h = 0, q = 0, kv = 0, ffn = 0;
};

Widths widths(const ModelSpec& m, int tp) {
  FSDP_CHECK(tp >= 1, "op_sac: tp must be >= 1");
  const double t = tp;
  Widths w;
  w.h = static_cast<double>(m.hidden);
  w.q = static_cast<double>(m.q_dim()) / t;
  w.kv = std::max(static_cast<double>(m.kv_heads) / t, 1.0) * static_cast<double>(m.head_dim);
  w.ffn = static_cast<double>(m.ffn_hidden) / t;
  return w;
}

}  // namespace

std::vector<BlockMatmul> op_sac_matmuls(const ModelSpec& m, int tp) {
  const Widths w = widths(m, tp);
  std::vector<BlockMatmul> mms;
  // torchtitan's Llama Attention projects with separate wq, wk, wv (models/llama/model.py); GPT-style
  // blocks (llm.c, Megatron) use one fused QKV projection.
  if (m.arch == Arch::llama) {
    mms.push_back({"wq", "qkv", w.h, w.q, false, false});
    mms.push_back({"wk", "qkv", w.h, w.kv, false, false});
    mms.push_back({"wv", "qkv", w.h, w.kv, false, false});
  } else {
    mms.push_back({"wqkv", "qkv", w.h, w.q + 2 * w.kv, false, false});
  }
  mms.push_back({"wo", "attn_out", w.q, w.h, true, false});
  // FeedForward.forward: w2(silu(w1(x)) * w3(x)), so w1 runs before w3.
  mms.push_back({"w1", "mlp_up", w.h, w.ffn, false, false});
  if (m.ffn_kind == FfnKind::swiglu) mms.push_back({"w3", "mlp_up", w.h, w.ffn, false, false});
  mms.push_back({"w2", "mlp_down", w.ffn, w.h, true, false});
  // The policy counts mm calls per block and saves odd-numbered ones: "Saves output of all compute ops,
  // except every second mm" (meta[mm_count_key] % 2 == 0 is recomputed).
  for (std::size_t i = 0; i < mms.size(); ++i) mms[i].saved = i % 2 == 0;
  return mms;
}

std::vector<KernelWork> op_sac_recompute_kernels(const ModelSpec& m, const LayerShape& s) {
  const compute_detail::RankDims d = compute_detail::rank_dims(m, s);
  const std::vector<BlockMatmul> mms = op_sac_matmuls(m, s.tp);
  std::vector<KernelWork> out;
  for (KernelWork& k : block_kernels(m, s, Pass::forward)) {
    // SDPA is saved; the block's last matmul (w2 / down) and the residual after it come after the
    // last tensor backward needs, so early stop skips them.
    if (is_attention_core(k) || k.name == "mlp_down" || k.name == "mlp_residual") continue;
    // A fused GEMM ("qkv", "mlp_up") holds several aten.mm of the count; a stack with separate
    // projections runs each as its own GEMM, named after it ("wq", "w1", ...).
    const bool matmul = k.matmul && k.attention_seq == 0;
    if (!matmul) {
      out.push_back(std::move(k));  // norms, RoPE, layout copies, attention residual, MLP activation
      continue;
    }
    for (const BlockMatmul& mm : mms)
      if ((mm.kernel == k.name || mm.name == k.name) && !mm.saved)
        out.push_back(compute_detail::gemm("recompute_" + mm.name, d.tokens, mm.out_cols, mm.in_cols, d.act_bytes));
  }
  return out;
}

}  // namespace fsdpx
