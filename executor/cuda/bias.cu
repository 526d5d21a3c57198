// executor/cuda/bias.cu — deterministic column sums: grid (column block, row chunk) writes partial sums,
// then one thread per column adds the chunks in order.
#include "executor/cuda/bias.h"

#include <type_traits>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;
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

// One thread per element of C, column-major: consecutive threads walk down a column (coalesced).
template <class C, class T>
__global__ void bias_add_columns_kernel(C* c, const T* bias, std::int64_t m, std::int64_t n, std::int64_t ldc) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (idx >= m * n) return;
  const std::int64_t i = idx % m, j = idx / m;
  C& x = c[j * ldc + i];
  const float sum = to_f32(x) + to_f32(bias[i]);
  if constexpr (std::is_same_v<C, float>) x = sum;
  else x = from_f32<C>(sum);
}

}  // namespace

template <class T>
void bias_add_columns(void* c, bool c_f32, const T* bias, std::int64_t m, std::int64_t n, std::int64_t ldc,
                      cudaStream_t stream) {
  FSDP_CHECK(m > 0 && n > 0 && ldc >= m, "bias_add_columns: bad shape");
  const auto blocks = unsigned(ceil_div<std::int64_t>(m * n, kBlock));
  if (c_f32)
    bias_add_columns_kernel<float, T><<<blocks, kBlock, 0, stream>>>(static_cast<float*>(c), bias, m, n, ldc);
  else
    bias_add_columns_kernel<T, T><<<blocks, kBlock, 0, stream>>>(static_cast<T*>(c), bias, m, n, ldc);
  CUDA_CHECK(cudaGetLastError());
}

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
template void bias_add_columns<bf16>(void*, bool, const bf16*, std::int64_t, std::int64_t, std::int64_t, cudaStream_t);
template void bias_add_columns<f16>(void*, bool, const f16*, std::int64_t, std::int64_t, std::int64_t, cudaStream_t);

}  // namespace fsdpx::cuda
