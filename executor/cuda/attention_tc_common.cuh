// executor/cuda/attention_tc_common.cuh — the pieces the tensor-core attention kernels share
// (attention_tc.h): block geometry, shared-memory tile loads, and one warp's WMMA product of a 16-row
// shared-memory tile with a tile or a transposed tile, accumulated in fp32 shared memory. WMMA's
// load/store_matrix_sync keep the fragment layouts opaque, so softmax runs on shared memory, not on
// registers as FA2's kernels do (a later performance pass: mma.sync fragments in registers).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include <mma.h>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/common.cuh"
#include "executor/model/attn_shape.h"

namespace fsdpx::cuda::tc {

constexpr int kBlock = 64;               // query rows per block, keys per tile
constexpr int kWarps = 4;                // each owns 16 rows of the block
constexpr int kThreads = kWarps * 32;
constexpr int kRows = kBlock / kWarps;   // 16: one WMMA tile edge
constexpr int kSld = kBlock + 4;         // fp32 score tiles' row stride (WMMA: multiple of 4 floats)
constexpr int kPld = kBlock + 8;         // 16-bit probability tiles' row stride (multiple of 8)

// Row strides of a [64, HD] 16-bit tile and of a [64, HD] fp32 accumulator; 16-bit rows padded by 16 B.
template <int kHd>
struct Ld {
  static constexpr int tile = kHd + 8, acc = kHd + 4;
};

struct Dims {
  int t, nh, nkv, row;  // row = (NH + 2·NKV)·HD elements per token
  float scale;
};

// The backward kernels' arguments (attention_tc_backward.cu, attention_fa2_backward.cu); delta =
// rowsum(dO ∘ O) per query row (flash_attention_delta).
template <class T>
struct BackwardArgs {
  T* dqkv;
  const T* dout;
  const T* qkv;
  const float* lse;
  const float* delta;
  Dims g;
};

// The launch constraints of attention_tc.h, checked; the kernels' dims. `ptrs` must be 16-byte aligned.
inline Dims tc_dims(const AttnShape& s, std::initializer_list<const void*> ptrs) {
  FSDP_CHECK(s.b > 0 && s.t > 0 && s.nkv > 0 && s.nh % s.nkv == 0 && s.nh <= 65535 && s.b <= 65535,
             fmt::format("tensor-core attention: bad shape b={} t={} nh={} nkv={}", s.b, s.t, s.nh, s.nkv));
  FSDP_CHECK(s.hd == 64 || s.hd == 128, fmt::format("tensor-core attention: head_dim {} not 64 or 128", s.hd));
  FSDP_CHECK(s.b * s.t * s.qkv_row() < (std::int64_t(1) << 62) && s.t < (1 << 30), "tensor-core attention: too large");
  for (const void* p : ptrs)
    FSDP_CHECK(reinterpret_cast<std::uintptr_t>(p) % 16 == 0, "tensor-core attention: pointer not 16-byte aligned");
  return Dims{int(s.t), int(s.nh), int(s.nkv), int(s.qkv_row()), float(1.0 / std::sqrt(double(s.hd)))};
}

// Calls fn(std::integral_constant<int, HD>) for HD 64 or 128 (tc_dims checked it).
template <class Fn>
void dispatch_tc_head_dim(std::int64_t hd, Fn&& fn) {
  if (hd == 64) fn(std::integral_constant<int, 64>{});
  else fn(std::integral_constant<int, 128>{});
}

// Sets a kernel's dynamic shared-memory limit to `bytes` (above the 48 KiB default) and checks it.
template <class Kernel>
void allow_shared_bytes(Kernel kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// Rows [r0, r0 + 64) of `src` (row stride ld elements, starting at column col) into a [64, HD] tile of
// stride Ld::tile, 16 bytes per copy; rows ≥ t are zero (0 bits are 0.0 in bf16 and f16).
template <int kHd, class T>
__device__ void load_rows(T* tile, const T* src, int r0, int t, std::int64_t ld, std::int64_t col) {
  constexpr int kVec = 8, kChunks = kHd / kVec;
  for (int e = threadIdx.x; e < kBlock * kChunks; e += kThreads) {
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r0 + r < t) v = *reinterpret_cast<const uint4*>(src + std::int64_t(r0 + r) * ld + col + c);
    *reinterpret_cast<uint4*>(tile + r * Ld<kHd>::tile + c) = v;
  }
}

// Every element of a [64, width] fp32 tile of row stride ld set to 0, by the whole block.
__device__ __forceinline__ void zero_rows(float* tile, int ld) {
  for (int e = threadIdx.x; e < kBlock * ld; e += kThreads) tile[e] = 0.0f;
}

// One warp: C[16, 16·kN] (fp32, row stride ldc) = (kAccumulate ? C : 0) + A[16, kK] · B, with A row-major
// (lda). B is [kK, 16·kN]: with kBT, the transpose of X [16·kN, kK] row-major (ldb), read as a col_major
// fragment (element (k, n) at X[n·ldb + k]); otherwise row-major (ldb). Pointers 32-byte aligned.
template <int kK, int kN, bool kBT, bool kAccumulate, class T>
__device__ __forceinline__ void warp_gemm(float* c, int ldc, const T* a, int lda, const T* b, int ldb) {
  namespace wmma = nvcuda::wmma;
  using BLayout = std::conditional_t<kBT, wmma::col_major, wmma::row_major>;
#pragma unroll 1
  for (int n = 0; n < kN; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    if constexpr (kAccumulate) wmma::load_matrix_sync(acc, c + n * 16, ldc, wmma::mem_row_major);
    else wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int k = 0; k < kK / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> fb;
      wmma::load_matrix_sync(fa, a + k * 16, lda);
      wmma::load_matrix_sync(fb, kBT ? b + n * 16 * ldb + k * 16 : b + k * 16 * ldb + n * 16, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + n * 16, acc, ldc, wmma::mem_row_major);
  }
}

}  // namespace fsdpx::cuda::tc
