// executor/model/rope_table.h — the rotary position embedding's angle tables (Su et al. 2021, RoFormer),
// device-neutral: every backend rotates Q and K by these cos/sin values (the CPU kernels in
// executor/cpu/rope.h, the CUDA ones upload them as fp32). Llama 3.1's frequency scaling and YaRN's
// frequencies and cos/sin scale when the model has them, and DeepSeek's YaRN softmax-scale factor, which
// latent attention applies. Leaves out the rotation itself and the other RoPE scaling types (linear,
// dynamic NTK, LongRoPE).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx {

// Inverse frequency of rotary pair i (radians per token): theta^(−2i/head_dim), then the Llama 3.1
// scaling when `scaling` is llama3 (meta-llama/llama-models models/llama3/reference_impl/model.py
// apply_scaling; transformers modeling_rope_utils.py _compute_llama3_parameters), or YaRN's blend of it
// and it / factor by a linear ramp over the pairs between beta_fast and beta_slow turns in the original
// context (Peng et al. 2023, arXiv:2309.00071 §3.2 "NTK-by-parts"; transformers _compute_yarn_parameters;
// deepseek-ai/DeepSeek-V3 inference/model.py precompute_freqs_cis). head_dim: the rotated width
// (latent attention: qk_rope_head_dim).
double rope_inv_freq(std::int64_t i, std::int64_t head_dim, double theta, const RopeScaling& scaling);

// YaRN's get_mscale (transformers _compute_yarn_parameters get_mscale; modeling_deepseek_v3.py
// yarn_get_mscale): 0.1 · mscale · ln(factor) + 1, and 1 for factor <= 1.
double yarn_get_mscale(double factor, double mscale);

// The scale of cos and sin (transformers' attention_scaling, which multiplies both): YaRN's
// attention_factor as given, else get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both
// are set, else get_mscale(factor, 1) (arXiv:2309.00071 §3.4: sqrt(1/t) = 0.1 ln(s) + 1); 1 otherwise.
double rope_attention_factor(const RopeScaling& scaling);

// DeepSeek's extra softmax-scale factor: get_mscale(factor, mscale_all_dim)^2 where mscale_all_dim is set,
// else 1 (transformers modeling_deepseek_v3.py yarn_apply_mscale; DeepSeek-V3 inference/model.py MLA
// softmax_scale). Latent attention multiplies its (qk_nope + qk_rope)^-1/2 by it.
double yarn_softmax_scale_factor(const RopeScaling& scaling);

// cos/sin tables [T, head_dim/2]: angle(t, i) = t · rope_inv_freq(i), computed in double, each value times
// rope_attention_factor (a rotation and a scale: backward by the opposite angle stays its transpose).
template <class Real>
struct RopeTable {
  std::int64_t seq = 0, half = 0;
  std::vector<Real> cos, sin;  // [T, head_dim/2] each
};
template <class Real>
RopeTable<Real> make_rope_table(std::int64_t seq, std::int64_t head_dim, double theta,
                                const RopeScaling& scaling = {});
// Rows for the given positions (row i: angle(positions[i], ·)), e.g. a context-parallel rank's tokens.
template <class Real>
RopeTable<Real> make_rope_table(const std::vector<std::int64_t>& positions, std::int64_t head_dim, double theta,
                                const RopeScaling& scaling = {});

}  // namespace fsdpx
