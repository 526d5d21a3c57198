// executor/model/lora_layout.cpp — the adapters' flat layout, their init and the merge into the base
// weights (see lora_layout.h).
#include "executor/model/lora_layout.h"

#include <cmath>

#include "core/errors.h"
#include "executor/model/init.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

LoraLayout make_lora_layout(const ModelSpec& m, const LoraSettings& s) {
  LoraLayout l;
  l.rank = s.rank;
  l.scale = s.scale();
  l.layers = m.layers;
  for (const LoraProjection& p : lora_projections(m, s)) {
    LoraSlot slot{p.target, p.in, p.out, l.block_numel, l.block_numel + s.rank * p.in, 0};
    switch (p.target) {
      case LoraTarget::k: slot.col = m.q_dim(); break;
      case LoraTarget::v: slot.col = m.q_dim() + m.kv_dim(); break;
      case LoraTarget::up: slot.col = m.ffn_kind == FfnKind::swiglu ? m.ffn_hidden : 0; break;  // [gate | up]
      default: break;
    }
    l.block_numel += s.rank * (p.in + p.out);
    l.slots.push_back(slot);
  }
  l.total = l.layers * l.block_numel;
  return l;
}

template <class Real>
void init_lora(const LoraLayout& l, std::uint64_t seed, Real* out) {
  for (std::int64_t blk = 0; blk < l.layers; ++blk)
    for (const LoraSlot& s : l.slots) {
      Real* a = out + l.block_offset(blk) + s.a_offset;
      const double bound = 1.0 / std::sqrt(double(s.in));
      for (std::int64_t e = 0; e < l.rank * s.in; ++e)
        a[e] = Real(bound * (2.0 * lora_uniform(seed, l.block_offset(blk) + s.a_offset + e) - 1.0));
      Real* b = out + l.block_offset(blk) + s.b_offset;
      for (std::int64_t e = 0; e < s.out * l.rank; ++e) b[e] = Real(0);
    }
}

int lora_slot(const LoraLayout& l, LoraTarget target) {
  for (std::size_t k = 0; k < l.slots.size(); ++k)
    if (l.slots[k].target == target) return int(k);
  return -1;
}

// Row offset of each target's weight in the base model: q/k/v in qkv.weight, gate/up in mlp_up.weight.
void merge_lora(const ModelSpec& m, const LoraLayout& l, const float* adapters, float* full) {
  const ParamLayout layout = make_param_layout(m);
  for (std::int64_t blk = 0; blk < l.layers; ++blk) {
    const ModuleLayout& ml = layout.modules[std::size_t(layout.block_index(blk))];
    for (const LoraSlot& s : l.slots) {
      const bool attn = s.target == LoraTarget::q || s.target == LoraTarget::k || s.target == LoraTarget::v;
      const char* name = attn ? "qkv.weight"
                         : s.target == LoraTarget::o ? "attn_out.weight"
                         : s.target == LoraTarget::down ? "mlp_down.weight" : "mlp_up.weight";
      const TensorSlot* t = ml.find(name);
      FSDP_CHECK(t != nullptr && t->cols == s.in, "merge_lora: adapter and weight disagree");
      float* w = full + ml.offset + t->offset + s.col * s.in;  // rows [col, col + out) of W [rows, in]
      const float* a = adapters + l.block_offset(blk) + s.a_offset;
      const float* b = adapters + l.block_offset(blk) + s.b_offset;
      for (std::int64_t i = 0; i < s.out; ++i)
        for (std::int64_t j = 0; j < s.in; ++j) {
          double sum = 0;
          for (std::int64_t k = 0; k < l.rank; ++k) sum += double(b[i * l.rank + k]) * double(a[k * s.in + j]);
          w[i * s.in + j] += float(l.scale * sum);
        }
    }
  }
}

template void init_lora<float>(const LoraLayout&, std::uint64_t, float*);
template void init_lora<double>(const LoraLayout&, std::uint64_t, double*);

}  // namespace fsdpx
