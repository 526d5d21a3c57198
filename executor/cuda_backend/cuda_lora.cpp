// executor/cuda_backend/cuda_lora.cpp — the adapter GEMMs of cuda_lora.h: the shapes come from
// lora_gemm_plan.h (checked against the CPU adapter path on the host), the operands from here.
#include "executor/cuda_backend/cuda_lora.h"

#include <utility>

#include "core/errors.h"
#include "executor/cuda_backend/lora_gemm_plan.h"

namespace fsdpx::cuda {
namespace {

// Device pointers of one adapter's operands (null where a pass does not use them).
struct Operands {
  const bf16* x = nullptr;
  bf16* y = nullptr;
  const bf16* dy = nullptr;
  bf16* dx = nullptr;
  const bf16* a = nullptr;
  const bf16* b = nullptr;
  float* da = nullptr;
  float* db = nullptr;
  const bf16* u = nullptr;  // read by the GEMMs after the first forward one
  bf16* u_out = nullptr;    // written by the first forward GEMM
  bf16* du = nullptr;
};

const bf16* input(const Operands& o, LoraOperand w) {
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

std::pair<void*, GemmOut> output(const Operands& o, LoraOperand w) {
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

void run(GemmContext& gemm, const LoraGemm& g, const Operands& o, cudaStream_t stream) {
  const bf16* a = input(o, g.a);
  const bf16* b = input(o, g.b);
  const auto [c, c_type] = output(o, g.c);
  FSDP_CHECK(a && b && c, "lora gemm: operand not set");
  const std::int64_t c_bytes = c_type == GemmOut::f32 ? 4 : 2;
  gemm_col_major(gemm, g.trans_a, g.trans_b, g.m, g.n, g.k, a + g.a_offset, g.lda, b + g.b_offset, g.ldb,
                 static_cast<char*>(c) + g.c_offset * c_bytes, c_type, g.ldc, g.accumulate, nullptr, stream, g.alpha);
}

// The adapter of `target` in block `b` and its operands A, B (and dA, dB with gradients); null slot when
// the block does not adapt `target`.
const LoraSlot* slot_of(const CudaLoraBlock& b, LoraTarget target, Operands& o) {
  const int k = b.layout ? lora_slot(*b.layout, target) : -1;
  if (k < 0) return nullptr;
  const LoraSlot& s = b.layout->slots[std::size_t(k)];
  o.a = b.params + s.a_offset, o.b = b.params + s.b_offset;
  if (b.grads) o.da = b.grads + s.a_offset, o.db = b.grads + s.b_offset;
  return &s;
}

std::int64_t slot_index(const CudaLoraBlock& b, const LoraSlot& s) { return &s - b.layout->slots.data(); }

}  // namespace

std::int64_t lora_saved_elems(const LoraLayout* l, std::int64_t tokens) {
  return l ? std::int64_t(l->slots.size()) * tokens * l->rank : 0;
}

void lora_forward_bf16(GemmContext& gemm, const CudaLoraBlock& b, LoraTarget target, const bf16* x, bf16* y,
                       std::int64_t y_width, std::int64_t n, bf16* saved_u, cudaStream_t stream) {
  Operands o;
  const LoraSlot* s = slot_of(b, target, o);
  if (!s) return;
  FSDP_CHECK(b.params != nullptr && saved_u != nullptr, "lora_forward_bf16: adapters or saved u not set");
  o.x = x, o.y = y;
  o.u_out = saved_u + slot_index(b, *s) * n * b.layout->rank;
  o.u = o.u_out;
  for (const LoraGemm& g : lora_forward_gemms(*s, b.layout->rank, b.layout->scale, n, y_width)) run(gemm, g, o, stream);
}

void lora_backward_bf16(GemmContext& gemm, const CudaLoraBlock& b, LoraTarget target, const bf16* x, const bf16* dy,
                        std::int64_t y_width, bf16* dx, std::int64_t n, const bf16* saved_u, bf16* du,
                        cudaStream_t stream) {
  Operands o;
  const LoraSlot* s = slot_of(b, target, o);
  if (!s) return;
  FSDP_CHECK(b.params != nullptr && b.grads != nullptr && saved_u != nullptr && du != nullptr,
             "lora_backward_bf16: adapters, their gradient, saved u or du scratch not set");
  o.x = x, o.dy = dy, o.dx = dx, o.du = du;
  o.u = saved_u + slot_index(b, *s) * n * b.layout->rank;
  for (const LoraGemm& g : lora_backward_gemms(*s, b.layout->rank, b.layout->scale, n, y_width)) run(gemm, g, o, stream);
}

}  // namespace fsdpx::cuda
