// executor/cpu/rope.h — rotary position embedding (Su et al. 2021, RoFormer) on the Q and K parts of
// the fused qkv activation, in place, with the "rotate_half" pairing of Hugging Face's Llama (dim i
// pairs with i + head_dim/2), by the angles of the device-neutral tables (executor/model/rope_table.h:
// Llama 3.1's frequency scaling, or YaRN's frequencies and cos/sin scale, when the model has them).
// Backward rotates the gradient by the opposite angle (times the same scale: the transpose). Leaves out
// the other RoPE scaling types (linear, dynamic NTK, LongRoPE).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/rope_table.h"

namespace fsdpx::cpu {

// The tables live in executor/model/rope_table.h (device-neutral); the kernels below rotate by them.
using fsdpx::make_rope_table;
using fsdpx::rope_inv_freq;
using fsdpx::RopeTable;

// qkv [B, T, (NH + 2·NKV)·HD]: rotates the NH query heads and the NKV key heads in place; V untouched.
template <class Real>
void rope_forward(Real* qkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                  std::int64_t nkv, std::int64_t hd);

// dqkv [B, T, (NH + 2·NKV)·HD]: gradient w.r.t. the rotated Q, K in, w.r.t. the unrotated Q, K out.
template <class Real>
void rope_backward(Real* dqkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                   std::int64_t nkv, std::int64_t hd);

}  // namespace fsdpx::cpu
