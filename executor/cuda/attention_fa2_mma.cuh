// executor/cuda/attention_fa2_mma.cuh — the warp-level tensor-core pieces of the register-resident
// attention kernels (attention_fa2.h): ldmatrix loads, mma.sync m16n8k16 with fp32 accumulators, the
// packing of accumulators into 16-bit A fragments, quad reductions, and the two tile products every
// kernel uses (C += A·Xᵀ with both operands in shared memory; C += P·Y with P in registers).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"): with
// g = lane / 4 and q = lane % 4, A (16 x 16, row) regs a0..a3 hold (g, 2q..2q+1), (g+8, 2q..), (g, 8+2q..),
// (g+8, 8+2q..); B (16 x 8, col) regs b0, b1 hold (k 2q..2q+1, n g), (k 8+2q.., n g); C (16 x 8 fp32)
// c0..c3 hold (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1). ldmatrix (PTX ISA, "ldmatrix") gives lane the
// 8x8 matrix i's row lane/4, columns 2·(lane%4)..+1 in register i (with .trans: rows 2·(lane%4)..+1 of
// column lane/4), the rows' addresses coming from lanes 8i..8i+7. So an accumulator pair of n-blocks
// (2k, 2k+1), packed pairwise, is exactly the A fragment of the next product's k-step k (FA2's trick).
// Leaves out: wgmma (sm_90's warpgroup MMA), cp.async.
#pragma once

#include <cstdint>
#include <type_traits>

#include "executor/cuda/attention_tc_common.cuh"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda::fa2 {

using tc::kBlock;    // 64 rows per tile
using tc::kRows;     // 16 rows per warp
using tc::kThreads;  // 4 warps per block
constexpr float kLog2e = 1.4426950408889634f;  // exp(x) = exp2(x·log2 e): the kernels use exp2f

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 16-bit matrices; lanes 8i..8i+7 give the row addresses of matrix i (16-byte aligned).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// d (16 x 8 fp32) += a (16 x 16) · b (16 x 8), 16-bit operands of type T.
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  if constexpr (std::is_same_v<T, bf16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<T, f16>, "mma_16816: bf16 or f16");
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T and packed, `lo` in the low 16 bits (the lower column of a fragment pair).
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  std::uint32_t bits;
  if constexpr (std::is_same_v<T, bf16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    bits = *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    bits = *reinterpret_cast<const std::uint32_t*>(&v);
  }
  return bits;
}

// The two T values of a packed pair, as floats (lo: the lower column).
template <class T>
__device__ __forceinline__ float2 unpack2(std::uint32_t bits) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  }
}

// Max (or sum) over the 4 lanes of a quad: the lanes holding one accumulator row.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The tile shape of the kernels at head dim kHd, 64-row tiles: shared rows of `ld` 16-bit elements
// (tc::Ld: padded by 16 bytes, so the 8 row addresses of one ldmatrix matrix fall in distinct banks),
// mma k-steps over head dims and over a tile's rows, n-blocks of 8 columns over a tile's rows and over HD.
template <int kHd>
struct Geometry {
  static constexpr int ld = tc::Ld<kHd>::tile, hd_steps = kHd / 16, row_steps = tc::kBlock / 16;
  static constexpr int row_blocks = tc::kBlock / 8, hd_blocks = kHd / 8;
};

// Tile i ([64, HD] 16-bit, stride Geometry::ld) of a kernel's dynamic shared memory.
template <int kHd, class T>
__device__ __forceinline__ T* shared_tile(unsigned char* smem, int i) {
  return reinterpret_cast<T*>(smem) + i * tc::kBlock * Geometry<kHd>::ld;
}

// This lane's ldmatrix row and column offsets. A-style (also V-like .trans loads): matrices 0..3 at
// (rows +0, cols +0), (+8, +0), (+0, +8), (+8, +8). B-style (non-transposed B from a row-major Xᵀ tile):
// (+0, +0), (+0, +8), (+8, +0), (+8, +8), i.e. b0, b1 of n-block j, then b0, b1 of n-block j + 1.
__device__ __forceinline__ int a_row() { return (threadIdx.x % 8) + 8 * ((threadIdx.x / 8) % 2); }
__device__ __forceinline__ int a_col() { return 8 * ((threadIdx.x % 32) / 16); }
__device__ __forceinline__ int b_row() { return (threadIdx.x % 8) + 8 * ((threadIdx.x % 32) / 16); }
__device__ __forceinline__ int b_col() { return 8 * ((threadIdx.x / 8) % 2); }

// One warp: c (16 x 8·kN, fp32 fragments) += A · Xᵀ, with a_frag(kk, af) giving A's fragment of k-step kk
// (16 columns) and X the 8·kN rows at `x`, row-major over 16·kKSteps columns of stride kLd, in shared memory.
template <int kKSteps, int kN, int kLd, class T, class AFrag>
__device__ __forceinline__ void mma_fbt(float (&c)[kN][4], AFrag&& a_frag, const T* x) {
  static_assert(kN % 2 == 0, "mma_fbt: n-blocks in pairs");
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) {
    std::uint32_t af[4];
    a_frag(kk, af);
#pragma unroll
    for (int j = 0; j < kN; j += 2) {
      std::uint32_t bf[4];  // B fragments of n-blocks j (bf[0], bf[1]) and j + 1 (bf[2], bf[3])
      ldmatrix_x4(bf, shared_address(x + (8 * j + b_row()) * kLd + 16 * kk + b_col()));
      mma_16816<T>(c[j], af, bf[0], bf[1]);
      mma_16816<T>(c[j + 1], af, bf[2], bf[3]);
    }
  }
}

// mma_fbt with A the 16 rows at `a` (same columns and stride as X), also in shared memory.
template <int kKSteps, int kN, int kLd, class T>
__device__ __forceinline__ void mma_abt(float (&c)[kN][4], const T* a, const T* x) {
  mma_fbt<kKSteps, kN, kLd>(
      c, [a](int kk, std::uint32_t(&af)[4]) { ldmatrix_x4(af, shared_address(a + a_row() * kLd + 16 * kk + a_col())); },
      x);
}

// One warp: c (16 x 8·kN) += P · Y, with P's A fragments in registers (k-step kk: pf[kk], 16 columns each)
// and Y the 16·kKSteps rows at `y` (row-major, stride kLd, 8·kN columns), read transposed by ldmatrix.
template <int kKSteps, int kN, int kLd, class T>
__device__ __forceinline__ void mma_py(float (&c)[kN][4], const std::uint32_t (&pf)[kKSteps][4], const T* y) {
  static_assert(kN % 2 == 0, "mma_py: n-blocks in pairs");
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) {
#pragma unroll
    for (int d = 0; d < kN; d += 2) {
      std::uint32_t yf[4];  // B fragments of n-blocks d (yf[0], yf[1]) and d + 1 (yf[2], yf[3])
      ldmatrix_x4_trans(yf, shared_address(y + (16 * kk + a_row()) * kLd + 8 * d + a_col()));
      mma_16816<T>(c[d], pf[kk], yf[0], yf[1]);
      mma_16816<T>(c[d + 1], pf[kk], yf[2], yf[3]);
    }
  }
}

// Accumulators s (16 x 8·kN fp32) rounded to T as A fragments over their 8·kN columns (kN/2 k-steps).
template <class T, int kN>
__device__ __forceinline__ void pack_a(std::uint32_t (&pf)[kN / 2][4], const float (&s)[kN][4]) {
#pragma unroll
  for (int kk = 0; kk < kN / 2; ++kk) {
    pf[kk][0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
    pf[kk][1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
    pf[kk][2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pf[kk][3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// A fragment array zeroed.
template <int kN>
__device__ __forceinline__ void zero(float (&c)[kN][4]) {
#pragma unroll
  for (int j = 0; j < kN; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
}

}  // namespace fsdpx::cuda::fa2
