// executor/cuda/rank_sum.cu — one thread per output element loops over the ranks in order; no shared
// memory, no atomics, so the result does not depend on the launch shape.
#include "executor/cuda/rank_sum.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(bf16* p, float v) { *p = to_bf16(v); }

// No __restrict__: `out` may alias one of the inputs (in-place reduce-scatter).
template <class T>
__global__ void sum_in_rank_order_kernel(T* out, RankInputs in, std::int64_t offset, std::int64_t count) {
  const std::int64_t i = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= count) return;
  float acc = to_f32(static_cast<const T*>(in.ptr[0])[offset + i]);
  for (int j = 1; j < in.n; ++j) acc += to_f32(static_cast<const T*>(in.ptr[j])[offset + i]);
  store(out + i, acc);
}

template <class T>
void launch(T* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t stream) {
  FSDP_CHECK(in.n >= 1 && in.n <= kMaxRankSumInputs, "sum_in_rank_order: 1..64 inputs");
  FSDP_CHECK(offset >= 0 && count >= 0, "sum_in_rank_order: negative offset or count");
  if (count == 0) return;
  const unsigned grid = unsigned(ceil_div<std::int64_t>(count, kBlock));
  sum_in_rank_order_kernel<T><<<grid, kBlock, 0, stream>>>(out, in, offset, count);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sum_in_rank_order(float* out, const RankInputs& in, std::int64_t offset, std::int64_t count,
                       cudaStream_t stream) {
  launch(out, in, offset, count, stream);
}

void sum_in_rank_order(bf16* out, const RankInputs& in, std::int64_t offset, std::int64_t count,
                       cudaStream_t stream) {
  launch(out, in, offset, count, stream);
}

}  // namespace fsdpx::cuda
