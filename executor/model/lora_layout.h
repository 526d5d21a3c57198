// executor/model/lora_layout.h — where the LoRA adapters (Hu et al. 2021, §4.1) of a model sit, for every
// backend: all adapters live in one flat buffer (block by block, in LoraTarget order, A [r, in] then
// B [out, r]), which every data-parallel rank holds whole: adapter gradients are all-reduced once per step
// and AdamW steps the whole buffer. A is Kaiming-uniform (peft's kaiming_uniform_(a = √5): U(±1/√in)),
// B zero, so the adapted model starts as the base. Leaves out the adapter GEMMs (each backend's).
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

// The slot of `target` in the layout, or -1 when the block does not adapt it.
int lora_slot(const LoraLayout& l, LoraTarget target);

}  // namespace fsdpx
