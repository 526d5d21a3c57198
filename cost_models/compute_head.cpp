// cost_models/compute_head.cpp — kernels outside the blocks on one rank: the token (+ learned
// position) embedding lookup and its scatter-add backward, and the head (final norm, LM head GEMM,
// fused softmax + cross-entropy) with Megatron's vocabulary-parallel split over TP. Leaves out the
// TP all-reduces of the embedding output and of the loss statistics (communication.h) and z-loss.
#include <utility>

#include "core/errors.h"
#include "cost_models/compute.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {
namespace {

using compute_detail::gemm;
using compute_detail::norm_kernel;
using compute_detail::RankDims;
using compute_detail::vector_kernel;

// Embedding forward (Megatron VocabParallelEmbedding): a rank gathers the rows of the ids in its
// vocabulary shard (about 1/t of them) and writes a full tokens×hidden output (zeros elsewhere; the
// TP all-reduce sums them). GPT adds the position row in the same kernel (llm.c encoder_forward).
KernelWork embedding_forward(const ModelSpec& m, const RankDims& d, double tp) {
  const double x = d.tokens * d.hidden * d.act_bytes;  // one tokens×hidden tensor
  const bool gpt = m.arch == Arch::gpt;
  const double read = x / tp + (gpt ? x : 0);  // rows of this vocabulary shard (+ position rows)
  return vector_kernel("embed", gpt ? d.tokens * d.hidden : 0, read, x);
}

// Embedding backward, a weight gradient only (token ids have none): PyTorch's dense embedding
// backward zero-fills the (vocab/t)×hidden gradient, then scatter-adds dY rows into it (read dY,
// read-modify-write the rows of this rank's ids). GPT also accumulates dY into the position table
// gradient (llm.c encoder_backward).
KernelWork embedding_backward(const ModelSpec& m, const RankDims& d, double tp) {
  const double e = d.act_bytes;
  const double dy = d.tokens * d.hidden * e;
  double read = dy + dy / tp;                       // dY, and the touched rows of this shard
  double write = d.vocab * d.hidden * e + dy / tp;  // zero-fill, and the updated rows
  double flops = d.tokens * d.hidden / tp;
  if (m.arch == Arch::gpt) {
    const double pos_table = static_cast<double>(m.max_seq) * d.hidden * e;
    read += dy;               // read-modify-write one position-gradient row per token
    write += pos_table + dy;  // after zero-filling the max_seq×hidden position gradient
    flops += d.tokens * d.hidden;
  }
  return vector_kernel("embed_dw", flops, read, write);
}

// Softmax cross-entropy over the tokens×(vocab/t) logits as eager PyTorch runs it in the frameworks we
// model (torchtitan and llm-foundry call F.cross_entropy(logits.float(), labels); Megatron's
// vocab-parallel loss also works on an fp32 copy): forward upcasts the logits to fp32 (read 2, write
// 4 bytes per logit), log_softmax reads and writes fp32 (8), nll gathers one value per token; backward
// writes the dense fp32 gradient of nll (4), log_softmax_backward reads it and the saved output and
// writes fp32 (12), and the cast back to the logits dtype reads fp32 and writes it (4 + 2). FLOPs:
// ~4 per logit forward (max, subtract, exp, sum), ~3 backward. A fused kernel (flash-attn's Triton
// CrossEntropyLoss, llm.c's fused_classifier: LossImpl::fused) reads the logits once in forward, keeping
// the per-token log-sum-exp, and once in backward, writing dlogits in the logits dtype.
KernelWork loss_kernel(const RankDims& d, bool backward) {
  constexpr double kFp32 = 4;
  const double logits = d.tokens * d.vocab;
  const double per_token = d.tokens * kFp32;
  if (d.stack.loss == LossImpl::fused) {
    if (backward) return vector_kernel("loss_bwd", 3 * logits, logits * d.act_bytes + 2 * per_token, logits * d.act_bytes);
    return vector_kernel("loss", 4 * logits, logits * d.act_bytes, 2 * per_token);
  }
  if (backward) {
    const double read = logits * (2 * kFp32 + kFp32) + per_token;
    const double write = logits * (kFp32 + kFp32 + d.act_bytes);
    return vector_kernel("loss_bwd", 3 * logits, read, write);
  }
  const double read = logits * (d.act_bytes + kFp32) + per_token;
  const double write = logits * (kFp32 + kFp32) + 2 * per_token;
  return vector_kernel("loss", 4 * logits, read, write);
}

}  // namespace

std::vector<KernelWork> embedding_kernels(const ModelSpec& m, const LayerShape& s, Pass p) {
  const RankDims d = compute_detail::rank_dims(m, s);
  switch (p) {
    case Pass::forward: return {embedding_forward(m, d, s.tp)};
    case Pass::input_grad: return {};
    case Pass::weight_grad: return {embedding_backward(m, d, s.tp)};
  }
  FSDP_CHECK(false, "embedding_kernels: unknown pass");
  return {};
}

// The LM head is column-parallel over the vocabulary (Megatron): logits[T×V/t] = X[T×h]·Wᵀ.
std::vector<KernelWork> head_kernels(const ModelSpec& m, const LayerShape& s, Pass p) {
  const RankDims d = compute_detail::rank_dims(m, s);
  const double e = d.act_bytes;
  switch (p) {
    case Pass::forward:
      return {norm_kernel("final_norm", m.arch, d.norm_tokens, d, Pass::forward),
              gemm("lm_head", d.tokens, d.vocab, d.hidden, e), loss_kernel(d, false)};
    case Pass::input_grad:
      return {loss_kernel(d, true), gemm("lm_head_dx", d.tokens, d.vocab, d.hidden, e),
              norm_kernel("final_norm_bwd", m.arch, d.norm_tokens, d, Pass::input_grad)};
    case Pass::weight_grad:
      return {gemm("lm_head_dw", d.tokens, d.vocab, d.hidden, e),
              norm_kernel("final_norm_dw", m.arch, d.norm_tokens, d, Pass::weight_grad)};
  }
  FSDP_CHECK(false, "head_kernels: unknown pass");
  return {};
}

}  // namespace fsdpx
