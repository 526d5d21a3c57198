// executor/cuda_backend/lora_gemm_plan.h — the column-major GEMMs of one LoRA adapter on the device (Hu et
// al. 2021, §4.1), as data: u = x Aᵀ and y[:, col:col+out] += s u Bᵀ forward; dB += s dyᵀ u, du = s dy B,
// dA += duᵀ x and dx += du A backward, the CPU's lora_forward/lora_backward (executor/model/lora.h) step
// for step with s folded into the GEMMs' alpha. Host-only, so tests/executor/test_lora_gemm_plan.cpp runs
// the very shapes cuda_lora.cpp hands to cuBLASLt through a reference GEMM without a GPU. Leaves out
// dropout and tensor-parallel slices.
#pragma once

#include <array>
#include <cstdint>

#include "executor/model/lora_layout.h"

namespace fsdpx::cuda {

// The operands of one adapter's GEMMs, all row-major: x [n, in], y and dy [n, y_width] (the adapter owns
// columns [col, col + out)), A and dA [r, in], B and dB [out, r], u and du [n, r], dx [n, in].
enum class LoraOperand { x, y, dy, dx, a, b, da, db, u, du };

// C (ldc) = (accumulate ? C : 0) + alpha · op(A) · op(B), column-major with m×k op(A) and k×n op(B), as
// cuda::gemm_col_major; each operand starts `offset` elements into its buffer.
struct LoraGemm {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  LoraOperand a{}, b{}, c{};
  std::int64_t a_offset = 0, b_offset = 0, c_offset = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f;
  bool accumulate = false;
};

// Row-major X [rows, cols] is column-major Xᵀ [cols, rows] with ld cols (executor/cuda/gemm.cpp), so each
// row-major product below is computed as its transpose.
inline std::array<LoraGemm, 2> lora_forward_gemms(const LoraSlot& s, std::int64_t rank, double scale,
                                                  std::int64_t tokens, std::int64_t y_width) {
  using O = LoraOperand;
  const std::int64_t r = rank, n = tokens;
  // uᵀ [r, n] = A [r, in] · xᵀ [in, n]
  const LoraGemm u{true, false, r, n, s.in, O::a, O::x, O::u, 0, 0, 0, s.in, s.in, r, 1.0f, false};
  // y[:, col:col+out]ᵀ [out, n] += s · B [out, r] · uᵀ [r, n]
  const LoraGemm y{true, false, s.out, n, r, O::b, O::u, O::y, 0, 0, s.col, r, r, y_width, float(scale), true};
  return {u, y};
}

inline std::array<LoraGemm, 4> lora_backward_gemms(const LoraSlot& s, std::int64_t rank, double scale,
                                                   std::int64_t tokens, std::int64_t y_width) {
  using O = LoraOperand;
  const std::int64_t r = rank, n = tokens;
  const float sc = float(scale);
  // dBᵀ [r, out] += s · uᵀ [r, n] · dy[:, col:col+out] [n, out]
  const LoraGemm db{false, true, r, s.out, n, O::u, O::dy, O::db, 0, s.col, 0, r, y_width, r, sc, true};
  // duᵀ [r, n] = s · Bᵀ [r, out] · dy[:, col:col+out]ᵀ [out, n]
  const LoraGemm du{false, false, r, n, s.out, O::b, O::dy, O::du, 0, s.col, 0, r, y_width, r, sc, false};
  // dAᵀ [in, r] += xᵀ [in, n] · du [n, r]
  const LoraGemm da{false, true, s.in, r, n, O::x, O::du, O::da, 0, 0, 0, s.in, r, s.in, 1.0f, true};
  // dxᵀ [in, n] += Aᵀ [in, r] · duᵀ [r, n]
  const LoraGemm dx{false, false, s.in, n, r, O::a, O::du, O::dx, 0, 0, 0, s.in, r, s.in, 1.0f, true};
  return {db, du, da, dx};
}

}  // namespace fsdpx::cuda
