// executor/cuda_backend/cuda_lora.cpp — the adapter GEMMs of cuda_lora.h: the shapes come from
// lora_gemm_plan.h (checked against the CPU adapter path on the host), the operands from here.
#include "executor/cuda_backend/cuda_lora.h"

#include <utility>

#include "core/errors.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/lora_gemm_plan.h"

namespace fsdpx::cuda {
namespace {

// Device pointers of one adapter's operands (null where a pass does not use them).
template <class T>
struct Operands {
  const T* x = nullptr;
  T* y = nullptr;
  const T* dy = nullptr;
  T* dx = nullptr;
  const T* a = nullptr;
  const T* b = nullptr;
  float* da = nullptr;
  float* db = nullptr;
  const T* u = nullptr;  // read by the GEMMs after the first forward one
  T* u_out = nullptr;    // written by the first forward GEMM
  T* du = nullptr;
};

template <class T>
const T* input(const Operands<T>& o, LoraOperand w) {
  switch (w) {
    case LoraOperand::x: return o.x;
    case LoraOperand::dy: return o.dy;
    case LoraOperand::a: return o.a;
    case LoraOperand::b: return o.b;
    case LoraOperand::u: return o.u;
    case LoraOperand::du: return o.du;
    default: FSDP_CHECK(false, "lora gemm: not an input operand"); return nullptr;
  }
}

template <class T>
std::pair<void*, GemmOut> output(const Operands<T>& o, LoraOperand w) {
  switch (w) {
    case LoraOperand::y: return {o.y, GemmOut::operand};
    case LoraOperand::dx: return {o.dx, GemmOut::operand};
    case LoraOperand::u: return {o.u_out, GemmOut::operand};
    case LoraOperand::du: return {o.du, GemmOut::operand};
    case LoraOperand::da: return {o.da, GemmOut::f32};
    case LoraOperand::db: return {o.db, GemmOut::f32};
    default: FSDP_CHECK(false, "lora gemm: not an output operand"); return {nullptr, GemmOut::f32};
  }
}

template <class T>
void run(GemmContext& gemm, const LoraGemm& g, const Operands<T>& o, cudaStream_t stream) {
  const T* a = input(o, g.a);
  const T* b = input(o, g.b);
  const auto [c, c_type] = output(o, g.c);
  FSDP_CHECK(a && b && c, "lora gemm: operand not set");
  const std::int64_t c_bytes = c_type == GemmOut::f32 ? 4 : std::int64_t(sizeof(T));
  gemm_col_major(gemm, g.trans_a, g.trans_b, g.m, g.n, g.k, a + g.a_offset, g.lda, b + g.b_offset, g.ldb,
                 static_cast<char*>(c) + g.c_offset * c_bytes, c_type, g.ldc, g.accumulate, nullptr, stream, g.alpha);
}

// The adapter of `target` in block `b` and its operands A, B (and dA, dB with gradients); null slot when
// the block does not adapt `target`.
template <class T>
const LoraSlot* slot_of(const CudaLoraBlock<T>& b, LoraTarget target, Operands<T>& o) {
  const int k = b.layout ? lora_slot(*b.layout, target) : -1;
  if (k < 0) return nullptr;
  const LoraSlot& s = b.layout->slots[std::size_t(k)];
  o.a = b.params + s.a_offset, o.b = b.params + s.b_offset;
  if (b.grads) o.da = b.grads + s.a_offset, o.db = b.grads + s.b_offset;
  return &s;
}

template <class T>
std::int64_t slot_index(const CudaLoraBlock<T>& b, const LoraSlot& s) { return &s - b.layout->slots.data(); }

}  // namespace

std::int64_t lora_saved_elems(const LoraLayout* l, std::int64_t tokens) {
  return l ? std::int64_t(l->slots.size()) * tokens * l->rank : 0;
}

template <class T>
void lora_forward16(GemmContext& gemm, const CudaLoraBlock<T>& b, LoraTarget target, const T* x, T* y,
                       std::int64_t y_width, std::int64_t n, T* saved_u, cudaStream_t stream) {
  Operands<T> o;
  const LoraSlot* s = slot_of(b, target, o);
  if (!s) return;
  FSDP_CHECK(b.params != nullptr && saved_u != nullptr, "lora_forward16: adapters or saved u not set");
  o.x = x, o.y = y;
  o.u_out = saved_u + slot_index(b, *s) * n * b.layout->rank;
  o.u = o.u_out;
  for (const LoraGemm& g : lora_forward_gemms(*s, b.layout->rank, b.layout->scale, n, y_width)) run(gemm, g, o, stream);
}

template <class T>
void lora_backward16(GemmContext& gemm, const CudaLoraBlock<T>& b, LoraTarget target, const T* x, const T* dy,
                        std::int64_t y_width, T* dx, std::int64_t n, const T* saved_u, T* du,
                        cudaStream_t stream) {
  Operands<T> o;
  const LoraSlot* s = slot_of(b, target, o);
  if (!s) return;
  FSDP_CHECK(b.params != nullptr && b.grads != nullptr && saved_u != nullptr && du != nullptr,
             "lora_backward16: adapters, their gradient, saved u or du scratch not set");
  o.x = x, o.dy = dy, o.dx = dx, o.du = du;
  o.u = saved_u + slot_index(b, *s) * n * b.layout->rank;
  for (const LoraGemm& g : lora_backward_gemms(*s, b.layout->rank, b.layout->scale, n, y_width)) run(gemm, g, o, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void lora_forward16<T>(GemmContext&, const CudaLoraBlock<T>&, LoraTarget, const T*, T*, std::int64_t,  \
                                  std::int64_t, T*, cudaStream_t);                                                \
  template void lora_backward16<T>(GemmContext&, const CudaLoraBlock<T>&, LoraTarget, const T*, const T*,         \
                                   std::int64_t, T*, std::int64_t, const T*, T*, cudaStream_t);
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
