// executor/model/lora.h — LoRA adapters in the CPU model (Hu et al. 2021, §4.1): for each adapted
// projection W [out, in] of a block, A [r, in] and B [out, r], output W x + s B A x with s = alpha / r,
// through four small CPU GEMMs. The adapters' flat buffer, its layout and init are device-neutral
// (lora_layout.h). Runs without tensor parallelism and without adapter dropout.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/model/lora_layout.h"

namespace fsdpx {

// One block's adapters: params and, in backward, grads (the block's part of the flat buffers).
template <class Real>
struct LoraBlock {
  const LoraLayout* layout = nullptr;
  const Real* params = nullptr;
  Real* grads = nullptr;  // null outside backward
};

// y [n, y_width], columns [col, col + out) += s B A x for the slot of `target` (nothing when not
// adapted); x [n, in]. Keeps u = x Aᵀ [n, r] in saved[slot] (sized here).
template <class Real>
void lora_forward(const LoraBlock<Real>& b, LoraTarget target, const Real* x, Real* y, std::int64_t y_width,
                  std::int64_t n, std::vector<std::vector<Real>>& saved);
// From dy [n, y_width] (the slot's columns): dB += s dyᵀ u, dA += (s dy B)ᵀ x, dx [n, in] += (s dy B) A.
template <class Real>
void lora_backward(const LoraBlock<Real>& b, LoraTarget target, const Real* x, const Real* dy, std::int64_t y_width,
                   Real* dx, std::int64_t n, const std::vector<std::vector<Real>>& saved);

}  // namespace fsdpx
