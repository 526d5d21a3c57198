// executor/model/rope_table.h — the rotary position embedding's angle tables (Su et al. 2021, RoFormer),
// device-neutral: every backend rotates Q and K by these cos/sin values (the CPU kernels in
// executor/cpu/rope.h, the CUDA ones upload them as fp32). Llama 3.1's frequency scaling when the model
// has it. Leaves out the rotation itself and the other RoPE scaling types (linear, dynamic NTK, YaRN).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx {

// Inverse frequency of rotary pair i (radians per token): theta^(−2i/head_dim), then the Llama 3.1
// scaling when `scaling` is llama3 (meta-llama/llama-models models/llama3/reference_impl/model.py
// apply_scaling; transformers modeling_rope_utils.py _compute_llama3_parameters).
double rope_inv_freq(std::int64_t i, std::int64_t head_dim, double theta, const RopeScaling& scaling);

// cos/sin tables [T, head_dim/2]: angle(t, i) = t · rope_inv_freq(i), computed in double.
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
