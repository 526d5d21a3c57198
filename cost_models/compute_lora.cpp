// cost_models/compute_lora.cpp — adapter GEMMs of a block (see compute_lora.h).
#include "cost_models/compute_lora.h"

#include "cost_models/compute_internal.h"

namespace fsdpx {

std::vector<KernelWork> lora_block_kernels(const ModelSpec& m, const LoraSettings& l, const LayerShape& s, Pass p) {
  using compute_detail::gemm;
  const compute_detail::RankDims d = compute_detail::rank_dims(m, s);
  const double T = d.tokens, r = double(l.rank), e = d.act_bytes;
  std::vector<KernelWork> ks;
  if (p == Pass::weight_grad) return ks;
  for (const LoraProjection& proj : lora_projections(m, l)) {
    const std::string name = std::string("lora_") + lora_target_name(proj.target);
    const double in = double(proj.in), out = double(proj.out);
    if (p == Pass::forward) {
      ks.push_back(gemm(name + "_a", T, r, in, e));
      ks.push_back(gemm(name + "_b", T, out, r, e));
      continue;
    }
    ks.push_back(gemm(name + "_b_dw", out, r, T, e));
    ks.push_back(gemm(name + "_b_dx", T, r, out, e));
    ks.push_back(gemm(name + "_a_dw", r, in, T, e));
    ks.push_back(gemm(name + "_a_dx", T, in, r, e));
  }
  return ks;
}

double lora_flops_per_token(const ModelSpec& m, const LoraSettings& l) {
  return 6.0 * lora_params(m, l);
}

}  // namespace fsdpx
