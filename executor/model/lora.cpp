// executor/model/lora.cpp — the LoRA adapter GEMMs of the CPU model (see lora.h): four small GEMMs per
// projection through cpu/gemm.h: u = x Aᵀ, y += s u Bᵀ forward;
// dB += (s dy)ᵀ u, du = (s dy) B, dA += duᵀ x, dx += du A backward (Hu et al. 2021, §4.1).
#include "executor/model/lora.h"

#include "core/errors.h"
#include "executor/cpu/gemm.h"

namespace fsdpx {

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
  template void lora_forward<Real>(const LoraBlock<Real>&, LoraTarget, const Real*, Real*, std::int64_t,           \
                                   std::int64_t, std::vector<std::vector<Real>>&);                               \
  template void lora_backward<Real>(const LoraBlock<Real>&, LoraTarget, const Real*, const Real*, std::int64_t,    \
                                    Real*, std::int64_t, const std::vector<std::vector<Real>>&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
