// executor/model/lora.cpp — LoRA adapter layout, init, merge and the adapter GEMMs (see lora.h). The
// adapter path is four small GEMMs per projection through cpu/gemm.h: u = x Aᵀ, y += s u Bᵀ forward;
// dB += (s dy)ᵀ u, du = (s dy) B, dA += duᵀ x, dx += du A backward (Hu et al. 2021, §4.1).
#include "executor/model/lora.h"

#include <cmath>

#include "core/errors.h"
#include "executor/cpu/gemm.h"
#include "executor/model/init.h"

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

template <class Real>
void lora_forward(const LoraBlock<Real>& b, LoraTarget target, const Real* x, Real* y, std::int64_t y_width,
                  std::int64_t n, std::vector<std::vector<Real>>& saved) {
  const int k = lora_slot(*b.layout, target);
  if (k < 0) return;
  const LoraSlot& s = b.layout->slots[std::size_t(k)];
  const std::int64_t r = b.layout->rank;
  if (saved.size() < b.layout->slots.size()) saved.resize(b.layout->slots.size());
  std::vector<Real>& u = saved[std::size_t(k)];
  u.assign(std::size_t(n * r), Real(0));
  cpu::matmul_forward(u.data(), x, b.params + s.a_offset, static_cast<const Real*>(nullptr), n, s.in, r);
  std::vector<Real> delta(std::size_t(n * s.out));
  cpu::matmul_forward(delta.data(), u.data(), b.params + s.b_offset, static_cast<const Real*>(nullptr), n, r, s.out);
  const Real scale = Real(b.layout->scale);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < s.out; ++j) y[i * y_width + s.col + j] += scale * delta[std::size_t(i * s.out + j)];
}

template <class Real>
void lora_backward(const LoraBlock<Real>& b, LoraTarget target, const Real* x, const Real* dy, std::int64_t y_width,
                   Real* dx, std::int64_t n, const std::vector<std::vector<Real>>& saved) {
  const int k = lora_slot(*b.layout, target);
  if (k < 0) return;
  const LoraSlot& s = b.layout->slots[std::size_t(k)];
  const std::int64_t r = b.layout->rank;
  const Real scale = Real(b.layout->scale);
  std::vector<Real> dys(std::size_t(n * s.out)), du(std::size_t(n * r), Real(0));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < s.out; ++j) dys[std::size_t(i * s.out + j)] = scale * dy[i * y_width + s.col + j];
  const Real* u = saved[std::size_t(k)].data();
  cpu::matmul_backward_dw(b.grads + s.b_offset, static_cast<Real*>(nullptr), dys.data(), u, n, r, s.out);
  cpu::matmul_backward_dx(du.data(), dys.data(), b.params + s.b_offset, n, r, s.out);
  cpu::matmul_backward_dw(b.grads + s.a_offset, static_cast<Real*>(nullptr), du.data(), x, n, s.in, r);
  cpu::matmul_backward_dx(dx, du.data(), b.params + s.a_offset, n, s.in, r);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void init_lora<Real>(const LoraLayout&, std::uint64_t, Real*);                                         \
  template void lora_forward<Real>(const LoraBlock<Real>&, LoraTarget, const Real*, Real*, std::int64_t,           \
                                   std::int64_t, std::vector<std::vector<Real>>&);                               \
  template void lora_backward<Real>(const LoraBlock<Real>&, LoraTarget, const Real*, const Real*, std::int64_t,    \
                                    Real*, std::int64_t, const std::vector<std::vector<Real>>&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
