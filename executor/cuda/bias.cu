// executor/cuda/bias.cu — deterministic column sums: grid (column block, row chunk) writes partial sums,
// then one thread per column adds the chunks in order.
#include "executor/cuda/bias.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;
constexpr std::int64_t kMaxRowChunks = 64;  // fixed: the sum order does not depend on the GPU

std::int64_t row_chunks(std::int64_t n) { return n < kMaxRowChunks ? n : kMaxRowChunks; }

template <class T>
__global__ void column_partial_kernel(float* scratch, const T* dout, std::int64_t n, int oc, std::int64_t chunks) {
  const int j = blockIdx.x * kBlock + threadIdx.x;
  if (j >= oc) return;
  const std::int64_t rows = ceil_div(n, chunks), begin = blockIdx.y * rows, end = min(n, begin + rows);
  float acc = 0.0f;
  for (std::int64_t i = begin; i < end; ++i) acc += to_f32(dout[i * oc + j]);
  scratch[blockIdx.y * std::int64_t(oc) + j] = acc;
}

__global__ void column_finish_kernel(float* dbias, const float* scratch, int oc, std::int64_t chunks) {
  const int j = blockIdx.x * kBlock + threadIdx.x;
  if (j >= oc) return;
  float acc = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) acc += scratch[k * oc + j];
  dbias[j] += acc;
}

}  // namespace

std::int64_t bias_backward_scratch_elems(std::int64_t n, std::int64_t oc) { return row_chunks(n) * oc; }

template <class T>
void bias_backward(float* dbias, float* scratch, const T* dout, std::int64_t n, std::int64_t oc,
                   cudaStream_t stream) {
  FSDP_CHECK(n > 0 && oc > 0 && oc < (1 << 30), "bias_backward: bad shape");
  const std::int64_t chunks = row_chunks(n);
  const dim3 grid(unsigned(ceil_div<std::int64_t>(oc, kBlock)), unsigned(chunks));
  column_partial_kernel<T><<<grid, kBlock, 0, stream>>>(scratch, dout, n, int(oc), chunks);
  CUDA_CHECK(cudaGetLastError());
  column_finish_kernel<<<grid.x, kBlock, 0, stream>>>(dbias, scratch, int(oc), chunks);
  CUDA_CHECK(cudaGetLastError());
}

template void bias_backward<bf16>(float*, float*, const bf16*, std::int64_t, std::int64_t, cudaStream_t);
template void bias_backward<f16>(float*, float*, const f16*, std::int64_t, std::int64_t, cudaStream_t);

}  // namespace fsdpx::cuda
