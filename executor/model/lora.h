// executor/model/lora.h — LoRA adapters of the CPU model (Hu et al. 2021, §4.1): for each adapted
// projection W [out, in] of a block, A [r, in] and B [out, r], output W x + s B A x with s = alpha / r.
// All adapters of the model live in one flat buffer (block by block, in LoraTarget order, A then B), which
// every data-parallel rank holds whole: adapter gradients are all-reduced once per step and AdamW steps
// the whole buffer. A is Kaiming-uniform (peft's kaiming_uniform_(a = √5): U(±1/√in)), B zero, so the
// adapted model starts as the base. Runs without tensor parallelism and without adapter dropout.
#pragma once

#include <cstdint>
#include <vector>

#include "core/lora.h"
#include "core/model_spec.h"

namespace fsdpx {

// One adapted projection inside a block's part of the flat buffer: where A and B sit, and which columns
// [col, col + out) of which block output it adds to (its width `out_width`).
struct LoraSlot {
  LoraTarget target = LoraTarget::q;
  std::int64_t in = 0, out = 0;
  std::int64_t a_offset = 0, b_offset = 0;  // elements from the block's start
  std::int64_t col = 0;                     // first column of the output it adds to (q/k/v in qkv, gate/up in mlp_up)
};

struct LoraLayout {
  std::int64_t rank = 0;
  double scale = 0;              // alpha / rank
  std::vector<LoraSlot> slots;   // per block, in LoraTarget order
  std::int64_t block_numel = 0;
  std::int64_t layers = 0;
  std::int64_t total = 0;        // layers · block_numel
  std::int64_t block_offset(std::int64_t block) const { return block * block_numel; }
};
LoraLayout make_lora_layout(const ModelSpec& m, const LoraSettings& s);

// A Kaiming-uniform, B zero; element e of the buffer is a pure function of (seed, e).
template <class Real>
void init_lora(const LoraLayout& l, std::uint64_t seed, Real* out);

// W += s B A for every adapted projection: `full` is the base model in make_param_layout(m) order (tp = 1).
void merge_lora(const ModelSpec& m, const LoraLayout& l, const float* adapters, float* full);

// One block's adapters: params and, in backward, grads (the block's part of the flat buffers).
template <class Real>
struct LoraBlock {
  const LoraLayout* layout = nullptr;
  const Real* params = nullptr;
  Real* grads = nullptr;  // null outside backward
};

// The slot of `target` in the layout, or -1 when the block does not adapt it.
int lora_slot(const LoraLayout& l, LoraTarget target);

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
