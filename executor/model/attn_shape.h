// executor/model/attn_shape.h — the shape of one attention call, a device-neutral part of the model
// description that the CPU kernels (executor/cpu/attention.h) and the CUDA flash kernels
// (executor/cuda/attention.h) both take: B sequences of T queries, grouped KV heads (GQA; Ainslie et al.
// 2023) and the head dim. Leaves out masks and sliding windows (the kernels are causal).
#pragma once

#include <cstdint>

namespace fsdpx {

struct AttnShape {
  std::int64_t b = 0, t = 0;
  std::int64_t nh = 0;   // query heads
  std::int64_t nkv = 0;  // key/value heads; query head h reads kv head h / (nh / nkv)
  std::int64_t hd = 0;   // head dim
  std::int64_t qkv_row() const { return (nh + 2 * nkv) * hd; }
};

// Elements of the softmax probabilities [B, NH, T, T] that the plain attention (executor/cpu/attention.h)
// saves for backward; the CPU's latent attention sizes its saved state with it too.
inline std::int64_t attention_saved_elems(const AttnShape& s) { return s.b * s.nh * s.t * s.t; }

}  // namespace fsdpx
