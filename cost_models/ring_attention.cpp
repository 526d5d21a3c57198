// cost_models/ring_attention.cpp — the memory-bound kernels PyTorch's experimental context parallelism
// runs around its per-chunk SDPA calls (pytorch/pytorch torch/distributed/tensor/experimental/
// _attention.py, _templated_ring_attention and _templated_ring_attention_backward; torchtitan @9dec370
// runs it with the round-robin load balancer and convert_to_f32 on, both defaults). Leaves out the
// log-sum-exp tensors (one value per query head and token, 1/head_dim of the output) and the KV exchange
// itself (program/parallel_comms.cpp); the SDPA work stays the one attention kernel of compute_block.cpp.
#include <string>
#include <vector>

#include "cost_models/compute_internal.h"

namespace fsdpx::compute_detail {

namespace {

constexpr double kFp32Bytes = 4;

// `count` launches of one elementwise pass over `elems` elements: `read_per` and `write_per` bytes each.
void add_passes(std::vector<KernelWork>& ks, const std::string& name, double count, double elems, double read_per,
                double write_per) {
  for (int i = 0; i < int(count); ++i) ks.push_back(vector_kernel(name, elems, elems * read_per, elems * write_per));
}

// Step i >= 1 of a rank r updates a partial chunk when i > r (the load balancer's `partial` branch), else
// the whole tensor; over the cp ranks of a ring exactly half of those steps are partial. A partial step
// updates half of the accumulator, then _partial_update rebuilds the whole of it with torch.cat. This is
// the ranks' mean work per step i >= 1, as one update of 3/4 of the elements plus a copy of 1/2 of them.
constexpr double kUpdatedShare = 0.75;
constexpr double kRebuiltShare = 0.5;

// Forward: key.contiguous() and value.contiguous() once (SDPA's K and V arrive transposed), the
// torch.cat of K and V before each exchange but the last, and _SDPAMerger: each step's output cast to
// fp32; from step 1 on `out - sigmoid(block_lse - lse) * (out - block_out)` as three passes (difference,
// product, difference); the merged output cast back once.
std::vector<KernelWork> forward(const RankDims& d) {
  const double e = d.act_bytes, f = kFp32Bytes, steps = d.cp;
  const double out = d.tokens * d.v_dim, kv = d.tokens * (d.attention_kv_dim() + d.attention_v_dim());
  std::vector<KernelWork> ks;
  add_passes(ks, "ring_kv_contiguous", 1, kv, e, e);
  add_passes(ks, "ring_kv_cat", steps - 1, kv, e, e);
  add_passes(ks, "ring_out_to_fp32", 1, out, e, f);
  for (int i = 1; i < int(steps); ++i) {
    const double updated = kUpdatedShare * out;
    ks.push_back(vector_kernel("ring_out_to_fp32", updated, updated * e, updated * f));
    ks.push_back(vector_kernel("ring_merge_diff", updated, updated * 2 * f, updated * f));
    ks.push_back(vector_kernel("ring_merge_scale", updated, updated * f, updated * f));
    ks.push_back(vector_kernel("ring_merge_sub", updated, updated * 2 * f, updated * f));
    const double rebuilt = kRebuiltShare * out;
    ks.push_back(vector_kernel("ring_merge_cat", 0, rebuilt * f, rebuilt * f));
  }
  add_passes(ks, "ring_out_from_fp32", 1, out, f, e);
  return ks;
}

// Backward: fp32 zeros for dQ, dK and dV; K and V made contiguous and concatenated before each exchange
// but the last; per step the chunk's dQ, dK, dV (activation dtype) added into the fp32 accumulators and
// dK, dV concatenated in fp32 for the all-to-all to the next rank; the accumulators cast back at the end.
std::vector<KernelWork> backward(const RankDims& d) {
  const double e = d.act_bytes, f = kFp32Bytes, steps = d.cp;
  const double q = d.tokens * d.q_dim, kv = d.tokens * (d.attention_kv_dim() + d.attention_v_dim());
  std::vector<KernelWork> ks;
  add_passes(ks, "ring_grad_zeros", 1, q + kv, 0, f);
  add_passes(ks, "ring_kv_contiguous_bwd", 1, kv, e, e);
  add_passes(ks, "ring_kv_cat_bwd", steps - 1, kv, e, e);
  add_passes(ks, "ring_grad_add", 1, q + kv, f + e, f);  // step 0 adds whole tensors
  for (int i = 1; i < int(steps); ++i) {
    const double updated = kUpdatedShare * (q + kv), rebuilt = kRebuiltShare * (q + kv);
    ks.push_back(vector_kernel("ring_grad_add", updated, updated * (f + e), updated * f));
    ks.push_back(vector_kernel("ring_grad_cat", 0, rebuilt * f, rebuilt * f));
  }
  add_passes(ks, "ring_dkv_cat", steps, kv, f, f);
  add_passes(ks, "ring_grad_from_fp32", 1, q + kv, f, e);
  return ks;
}

}  // namespace

std::vector<KernelWork> ring_attention_kernels(const RankDims& d, bool backward_pass) {
  if (d.cp <= 1 || !d.stack.torch_ring_attention) return {};
  return backward_pass ? backward(d) : forward(d);
}

}  // namespace fsdpx::compute_detail
