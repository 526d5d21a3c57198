// cost_models/expert_compute.cpp — router, permutation, grouped expert and shared-expert kernels of one
// MoE block (what each models in cost_models/expert_compute.h). Leaves out aux-loss kernels.
#include "cost_models/expert_compute.h"

#include <algorithm>

#include "core/errors.h"

namespace fsdpx {
namespace {

// A GEMM of `rows` x `in` -> `out` for the pass: forward and input-grad have m = rows; weight-grad
// contracts over rows, so its smallest dimension is still min(rows, in, out). `per_gemm_rows` is the M of
// one expert's GEMM inside a grouped kernel; `weight_bytes` the weights read once per pass.
KernelWork gemm(const char* name, double rows, double per_gemm_rows, double in, double out, double weight_bytes,
                double act_bytes) {
  KernelWork k;
  k.name = name;
  k.matmul = true;
  k.flops = 2.0 * rows * in * out;
  k.bytes = weight_bytes + act_bytes * rows * (in + out);
  k.min_dim = std::min({per_gemm_rows, in, out});
  k.rows = rows;
  k.in_features = in;
  k.out_features = out;
  return k;
}

KernelWork vector_work(const char* name, double bytes) {
  KernelWork k;
  k.name = name;
  k.bytes = bytes;
  return k;
}

}  // namespace

double routed_expert_flops(const ModelSpec& m, const RoutedLoad& l, int tp) {
  FSDP_CHECK(tp >= 1 && m.moe.expert_ffn_hidden % tp == 0, "routed_expert_flops: tp divides the expert width");
  return 3 * 2.0 * l.slowest_rows * double(m.hidden) * double(m.moe.expert_ffn_hidden / tp);
}

std::vector<KernelWork> moe_mlp_kernels(const ModelSpec& m, const RoutedLoad& l, int tp, DType act, Pass p) {
  FSDP_CHECK(m.is_moe() && tp >= 1, "moe_mlp_kernels: an MoE model");
  const double b = dtype_bytes(act), h = double(m.hidden), e = double(m.moe.experts);
  const double f = double(m.moe.expert_ffn_hidden) / tp;
  const double expert_weight_bytes = double(l.local_experts) * h * f * b;  // one of gate / up / down
  std::vector<KernelWork> ks;
  // Router: tokens x hidden -> experts logits (replicated over tp), then scores and top-k in fp32.
  ks.push_back(gemm("moe_router", l.tokens, l.tokens, h, e, h * e * b, b));
  if (p != Pass::weight_grad) ks.push_back(vector_work("moe_topk", l.tokens * e * 4 * 2));
  // Permute rows to expert order before dispatch and back after combine: a read and a write each.
  if (p != Pass::weight_grad) ks.push_back(vector_work("moe_permute", 2 * 2 * l.mean_rows * h * b));
  ks.push_back(gemm("moe_experts_gate_up", l.slowest_rows, l.rows_per_expert, h, 2 * f, 2 * expert_weight_bytes, b));
  ks.push_back(gemm("moe_experts_down", l.slowest_rows, l.rows_per_expert, f, h, expert_weight_bytes, b));
  if (p != Pass::weight_grad) ks.push_back(vector_work("moe_swiglu", l.slowest_rows * 3 * f * b));
  if (m.moe.shared_experts > 0) {
    const double sf = double(m.moe.shared_experts * m.moe.shared_ffn_hidden) / tp;
    ks.push_back(gemm("moe_shared_gate_up", l.tokens, l.tokens, h, 2 * sf, 2 * h * sf * b, b));
    ks.push_back(gemm("moe_shared_down", l.tokens, l.tokens, sf, h, h * sf * b, b));
  }
  return ks;
}

}  // namespace fsdpx
