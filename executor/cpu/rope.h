// executor/cpu/rope.h — rotary position embedding (Su et al. 2021, RoFormer) on the Q and K parts of
// the fused qkv activation, in place, with the "rotate_half" pairing of Hugging Face's Llama (dim i
// pairs with i + head_dim/2), with Llama 3.1's frequency scaling when the model has it. Backward rotates
// the gradient by the opposite angle. Leaves out the other RoPE scaling types (linear, dynamic NTK, YaRN).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx::cpu {

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

// qkv [B, T, (NH + 2·NKV)·HD]: rotates the NH query heads and the NKV key heads in place; V untouched.
template <class Real>
void rope_forward(Real* qkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                  std::int64_t nkv, std::int64_t hd);

// dqkv [B, T, (NH + 2·NKV)·HD]: gradient w.r.t. the rotated Q, K in, w.r.t. the unrotated Q, K out.
template <class Real>
void rope_backward(Real* dqkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                   std::int64_t nkv, std::int64_t hd);

}  // namespace fsdpx::cpu
