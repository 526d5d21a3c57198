// cost_models/activations.cpp — activation bytes one rank keeps for backward: the tensors a block
// saves, itemised as in Korthikanti et al. 2022 (arXiv:2205.05198) §4.1 and generalised to any ffn
// size, SwiGLU, GQA, norm statistics, dropout or none, FlashAttention or materialised scores, TP/SP/CP, the three recompute modes and torchtitan's
// op-level selective AC, DeepSeek-V3's latent attention; plus the embedding/head tensors, the logits and what a separate weight-gradient
// pass keeps (zero-bubble pipelines). Leaves out allocator rounding, pipeline in-flight micro-batch counts
// (the step program's memory effects give them) and framework temporaries outside a block's backward.
#include <vector>

#include "core/errors.h"
#include "cost_models/memory.h"
#include "cost_models/op_sac.h"

namespace fsdpx {
namespace {

constexpr double kMaskBytes = 1;     // dropout masks are 1 byte per element (Korthikanti §4.1)
constexpr double kFp32Bytes = 4;     // FlashAttention log-sum-exp, fp32 softmax/loss buffers
constexpr double kTokenIdBytes = 8;  // int64 token ids (Megatron theoretical_memory_usage.py: 8·s·b)

// Statistics a norm saves for its backward, fp32 per token: LayerNorm its mean and reciprocal standard
// deviation, RMSNorm the reciprocal RMS (PyTorch native_layer_norm / _fused_rms_norm outputs; llm.c's
// ln_mean and ln_rstd). Korthikanti et al. 2022 leave them out (16 bytes against ~34h·2 per token).
double norm_stat_bytes(const ModelSpec& m) { return (m.arch == Arch::gpt ? 2 : 1) * kFp32Bytes; }

// Per-rank sizes. Tensors in the "norm region" (norm inputs, inputs to the column-parallel
// linears, dropout masks) are replicated across TP ranks unless SP shards them along s; tensors
// inside attention/MLP are split by TP (Korthikanti §4.2.1-4.2.2).
struct Dims {
  double tokens = 0;  // (s / cp) · b on this rank, before SP
  double seq_full = 0;
  double h = 0, q = 0, kv = 0, ffn = 0, heads = 0;
  double v_kept = 0, out = 0;  // the V storage SDPA's saved V keeps alive, and the attention output's width
  double latent = 0;  // latent attention: its latent tensors' elements per token (mla_latent_elems)
  double tp = 1, norm_div = 1, e = 2;
};

// DeepSeek-V3's latent attention as torchtitan runs it (torchtitan/models/deepseek_v3/model/model.py,
// Attention.forward), what autograd keeps per token beyond Q, K, V and the output: wq_a's output (q_norm's
// input) and q_norm's output (wq_b's input), q_lora_rank each; wkv_a's output, kv_lora_rank +
// qk_rope_head_dim, kept whole because kv_norm's input is a view of it; kv_norm's output (wkv_b's input),
// kv_lora_rank. Unsplit by tp: torchtitan's DeepSeek-V3 tensor-parallel plan leaves wq_a, q_norm, wkv_a and
// kv_norm unsharded (NoParallel) on the replicated attention input. The norms' fp32 statistics are
// mla_latent_stat_bytes.
double mla_latent_elems(const ModelSpec& m) {
  if (!m.is_mla()) return 0;
  const double rq = double(m.mla.q_lora_rank), rkv = double(m.mla.kv_lora_rank);
  return 2 * rq + (rkv + double(m.mla.qk_rope_head_dim)) + rkv;
}
double mla_latent_stat_bytes(const ModelSpec& m) {
  if (!m.is_mla()) return 0;
  return (m.mla.q_lora_rank > 0 ? 2 : 1) * 4.0;  // q_norm's and kv_norm's reciprocal RMS, fp32
}

Dims dims(const ModelSpec& m, const ActivationShape& s) {
  FSDP_CHECK(s.tp >= 1 && s.cp >= 1 && s.micro_batch >= 1 && s.seq >= 1, "bad activation shape");
  Dims d;
  d.tokens = static_cast<double>(s.seq) / s.cp * static_cast<double>(s.micro_batch);
  d.seq_full = static_cast<double>(s.seq);
  d.h = static_cast<double>(m.hidden);
  d.q = static_cast<double>(m.q_dim());
  d.kv = static_cast<double>(m.kv_dim());
  d.ffn = static_cast<double>(m.ffn_hidden);
  d.heads = static_cast<double>(m.heads);
  // Latent attention: V is a view of wkv_b's output, H x (qk_nope_head_dim + v_head_dim) per token, which SDPA
  // keeps whole by saving V; the output is H x v_head_dim wide (model.py: k_nope, v = torch.split(kv, ...)).
  d.v_kept = m.is_mla() ? d.heads * double(m.mla.qk_nope_head_dim + m.mla.v_head_dim) : d.kv;
  d.out = m.is_mla() ? d.heads * double(m.mla.v_head_dim) : d.q;
  d.latent = mla_latent_elems(m);
  d.tp = s.tp;
  d.norm_div = s.sequence_parallel ? s.tp : 1;
  d.e = s.act_bytes;
  return d;
}

// Norm region, bytes per token: two norm inputs (4sbh), QKV input (2sbh), MLP input (2sbh),
// attention-output and MLP-output dropout masks (sbh each) — Korthikanti's "10" plus nothing s² —
// and the two norms' fp32 statistics.
double norm_region_bytes(const ModelSpec& m, const Dims& d, const ActivationShape& s) {
  double b = 2 * d.h * d.e + d.h * d.e + d.h * d.e + 2 * norm_stat_bytes(m);
  if (s.dropout) b += 2 * d.h * kMaskBytes;
  return b / d.norm_div + mla_latent_stat_bytes(m);
}

// MLP tensors inside the TP region, bytes per token. GELU / squared-ReLU: the activation's input
// and output (fc2 input): 2·ffn, i.e. Korthikanti's 8sbh + 8sbh at ffn = 4h. SwiGLU: gate output,
// up output and their product (down-proj input): 3·ffn. Eager silu(w1 x) * (w3 x) also keeps silu's
// output: SiluBackward saves its input and MulBackward both factors (pytorch/pytorch
// tools/autograd/derivatives.yaml, "silu" and "mul.Tensor"), so 4·ffn.
double mlp_inner_bytes(const ModelSpec& m, const Dims& d, const ActivationShape& s) {
  const bool swiglu = m.ffn_kind == FfnKind::swiglu;
  const double tensors = swiglu ? (s.eager_swiglu ? 4 : 3) : 2;
  return tensors * d.ffn * d.e / d.tp;
}

// Attention tensors inside the TP region that are linear in s, bytes per token: Q and K (QK^T
// inputs, 4sbh), V (2sbh), out-proj input = attention output (2sbh); K and V are kv_dim wide (GQA).
// FlashAttention also keeps the fp32 log-sum-exp per head (4·a·s·b bytes); its output O is the
// out-proj input, counted once. Latent attention: V's kept storage and the output's width (Dims), and
// the latent tensors outside the TP region.
double attention_linear_bytes(const Dims& d, const ActivationShape& s) {
  double b = (d.q + d.kv + d.v_kept + d.out) * d.e;
  if (s.flash_attention) b += kFp32Bytes * d.heads;
  return b / d.tp + d.latent * d.e;
}

// The s×s tensors per token (Korthikanti's 5as²b at 16 bits with dropout): softmax output (2),
// dropout mask (1) and dropout output (2); without dropout only the softmax output. Each local query
// attends to all s keys, so with CP the row length stays s. None with FlashAttention.
double attention_score_bytes(const Dims& d, const ActivationShape& s) {
  if (s.flash_attention) return 0;
  const double per_score = s.dropout ? d.e + kMaskBytes + d.e : d.e;
  return d.heads * d.seq_full * per_score / d.tp;
}

// torchtitan's op-level SAC, bytes per token (cost_models/op_sac.h):
// - the block input, held by the checkpoint for the recompute (h, sharded by SP);
// - the outputs of the saved matmuls (Llama: wq, wv, w1, w2): column-parallel ones out_cols wide,
//   row-parallel ones the full hidden width on every TP rank (partial sums, before the reduction);
// - SDPA's saved outputs: O (q_dim / t) and the fp32 log-sum-exp per head;
// - with SP, the reduce-scatter outputs after wo and w2 (h / t each; in _save_list);
// nothing else: norms, RoPE, the SwiGLU/GELU activation and the residual adds are recomputed.
// Eager SAC caches every MUST_SAVE output as it runs (torch/utils/checkpoint.py,
// _CachingTorchDispatchMode), even the block's last matmul (w2), whose output only feeds the residual
// add and no backward needs; under torch.compile the partitioner saves only what the backward graph
// reads (torch/_functorch/partitioners.py, min_cut_rematerialization_partition), so not that one.
double op_sac_bytes_per_token(const ModelSpec& m, const Dims& d, const ActivationShape& s) {
  double b = d.h * d.e / d.norm_div;
  const std::vector<BlockMatmul> mms = op_sac_matmuls(m, s.tp);
  for (std::size_t i = 0; i < mms.size(); ++i)
    if (mms[i].saved && !(s.compiled && i + 1 == mms.size())) b += mms[i].out_cols * d.e;
  b += d.q * d.e / d.tp + kFp32Bytes * d.heads / d.tp;
  if (s.sequence_parallel && s.tp > 1) b += 2 * d.h * d.e / d.tp;
  return b;
}

// What eager PyTorch's autograd saves beyond the fused accounting, bytes per token (stack_costs.h).
// torchtitan's RMSNorm (x.float(), pow, mean, rsqrt, mul, type_as, * weight): pow and the rstd product
// save the fp32 copy of x (4h) and the weight product its bf16 input (2h), where a fused norm saves x
// (2h): +4h per norm, two norms. SDPA saves the K and V it was given, expanded to every query head by
// repeat_kv where the stack has it (+2·(q - kv) per token), and its output besides the contiguous copy
// wo saves (+q).
double eager_extra_bytes_per_token(const Dims& d, const ActivationShape& s) {
  double b = 0;
  if (s.eager_norm_fp32) b += 2 * 4 * d.h / d.norm_div;
  if (s.repeat_kv) b += 2 * (d.q - d.kv) * d.e / d.tp;
  if (s.attention_copies) b += d.out * d.e / d.tp;
  return b;
}

}  // namespace

// none: everything; selective: drop the s² tensors (Korthikanti §5, recompute core attention);
// full: only the block input (2sbh, or 2sbh/t with SP); selective_op: op_sac_bytes_per_token.
double block_activation_bytes(const ModelSpec& m, const ActivationShape& s, Recompute r) {
  const Dims d = dims(m, s);
  if (r == Recompute::full) return d.tokens * d.h * d.e / d.norm_div;
  if (r == Recompute::selective_op) return d.tokens * op_sac_bytes_per_token(m, d, s);
  double per_token = norm_region_bytes(m, d, s) + attention_linear_bytes(d, s) + mlp_inner_bytes(m, d, s) +
                     eager_extra_bytes_per_token(d, s);
  if (r == Recompute::none) per_token += attention_score_bytes(d, s);
  return d.tokens * per_token;
}

// Upper bound used for every recompute mode: the block's full activations (re-materialised under
// full recompute; for none/selective this counts the block's own saved tensors twice, at most one
// block's worth) plus the gradient tensors alive at once: the residual-stream gradient in and out,
// and the larger of the MLP's (one per saved MLP tensor) and attention's (dQ, dK, dV, and dP, dS
// without FlashAttention).
double block_backward_working_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  const double residual = 2 * d.h * d.e / d.norm_div;
  const double mlp = mlp_inner_bytes(m, d, s);
  double attn = (d.q + 2 * d.kv) * d.e / d.tp;
  if (!s.flash_attention) attn += 2 * d.heads * d.seq_full * d.e / d.tp;
  const double grads = d.tokens * (residual + (mlp > attn ? mlp : attn));
  return block_activation_bytes(m, s, Recompute::none) + grads;
}

// Token ids (int64) and the embedding dropout mask when dropout is on (Megatron's s·b·h, sharded by
// SP): what the embedding's backward (and the mask's) needs, freed with the embedding's backward.
double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  double per_token = kTokenIdBytes;
  if (s.dropout) per_token += d.h * kMaskBytes / d.norm_div;
  return d.tokens * per_token;
}

// The final norm's input and the LM-head input (Korthikanti's output layer 4sbh) and the final norm's
// fp32 statistics, sharded by SP; saved by the final norm and the head, freed with their backward.
double final_norm_activation_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  return d.tokens * (2 * d.h * d.e + norm_stat_bytes(m)) / d.norm_div;
}

// Eager softmax cross-entropy, F.cross_entropy(logits.float(), labels), as compute_head.cpp times it
// (torchtitan train.py: loss_fn on the fp32-upcast logits, then "del pred" "to avoid peaking memory"
// before loss.backward()). Across the loss forward and backward only log_softmax's fp32 output over the
// vocab-parallel head's V/t columns is kept (LogSoftmaxBackward saves its result; the act-dtype logits
// and their fp32 copy are freed), plus three fp32 per-token values (row max, log-sum-exp, loss).
// A fused cross-entropy (flash-attn's Triton CrossEntropyLoss, llm.c's fused classifier) keeps the
// logits in their own dtype and the fp32 log-sum-exp per token instead.
double logits_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  const double vocab_local = static_cast<double>(m.vocab) / d.tp;
  if (s.fused_loss) return d.tokens * (vocab_local * d.e + 2 * kFp32Bytes);
  return d.tokens * (vocab_local * kFp32Bytes + 3 * kFp32Bytes);
}

// The loss backward on top of logits_bytes: nll_loss_backward writes a dense fp32 gradient of the
// log-probabilities and log_softmax_backward_data reads it with the saved output and writes the fp32
// dlogits, so two more fp32 logits-sized tensors are alive at once (the cast back to the act dtype
// comes after both inputs are freed and needs less).
// Fused: the gradient of the logits in their dtype (one logits-sized tensor).
double logits_backward_working_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  const double vocab_local = static_cast<double>(m.vocab) / d.tp;
  if (s.fused_loss) return d.tokens * vocab_local * d.e;
  return d.tokens * vocab_local * 2 * kFp32Bytes;
}

// Forward: pred (act dtype) at the top, its fp32 copy above it, the log-probabilities above that; the
// copy and, after "del pred", pred are freed and coalesce. The backward's dense fp32 gradient of the
// log-probabilities takes the bottom of that hole, and the fp32 dlogits, larger than what is left,
// extends the segment (c10/cuda/CUDACachingAllocator.cpp: best fit among free blocks, else map more).
double eager_loss_hole_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  if (s.fused_loss || d.e >= kFp32Bytes) return 0;
  return d.tokens * static_cast<double>(m.vocab) / d.tp * d.e;
}

// Matmul inputs: the QKV input and the MLP input (norm region, sharded by SP), the out-projection
// input (q / t) and the down-projection input (ffn / t); output gradients: QKV (q + 2kv) / t, the
// out-projection and down-projection outputs (h, sharded by SP), up and gate (ffn / t each, gate only
// for SwiGLU). GPT at ffn = 4h, no TP: 7h + 9h = 16h elements per token, Qi et al.'s 32·sbh bytes.
double block_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  const double up = (m.ffn_kind == FfnKind::swiglu ? 2 : 1) * d.ffn;
  const double inputs = 2 * d.h / d.norm_div + (d.q + d.ffn) / d.tp;
  const double grads = (d.q + 2 * d.kv + up) / d.tp + 2 * d.h / d.norm_div;
  return d.tokens * (inputs + grads) * d.e;
}

double embedding_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  return d.tokens * (kTokenIdBytes + d.h * d.e / d.norm_div);
}

double head_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s) {
  const Dims d = dims(m, s);
  return d.tokens * (d.h / d.norm_div + static_cast<double>(m.vocab) / d.tp) * d.e;
}

}  // namespace fsdpx
