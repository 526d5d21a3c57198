// executor/cuda/norm.cu — LayerNorm / RMSNorm kernels. Forward: one warp per row (llm.c
// layernorm_forward_kernel3 layout). Backward: one block per row chunk computes dinp and the chunk's
// dweight/dbias partial sums in one read of dout and inp (16-byte packs when C % 8 == 0), then a second
// kernel sums the chunk partials per column in a fixed order (llm.c layernorm_backward_kernel10's plan,
// with a fixed chunk count instead of one per SM slot). kLayer selects LayerNorm (mean subtracted, bias) or
// RMSNorm (mean = 0, no bias). Leaves out vectorised forward loads and the fused residual add.
//
// Bytes per backward (bf16, N rows × C): reads dout, inp, dinp and writes dinp, 8·N·C, plus the fp32
// partials written and read back, 2·4·min(N, 1024)·C (×2 for LayerNorm). At 16384 × 4096 that is 537 MB +
// 34 MB: 0.14 ms at 4 TB/s (the separate dinp and column-sum kernels before re-read dout and inp: 805 MB,
// and the H200 run measured ~0.57 ms per call at 8192 × 2048 where this predicts 0.036 ms).
#include "executor/cuda/norm.h"

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;                 // threads; 8 rows (warps) per block in the row kernels
template <bool kLayer, class T>
__global__ void norm_forward_kernel(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                                    std::int64_t n, int c, float eps) {
  const std::int64_t row = std::int64_t(blockIdx.x) * (kBlock / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* x = inp + row * c;  // [C]
  float m = 0.0f;
  if (kLayer) {
    for (int j = lane; j < c; j += 32) m += to_f32(x[j]);
    m = warp_sum(m) / float(c);
  }
  float v = 0.0f;
  for (int j = lane; j < c; j += 32) {
    const float d = to_f32(x[j]) - m;
    v += d * d;
  }
  const float s = rsqrtf(warp_sum(v) / float(c) + eps);  // biased variance / mean square
  T* y = out + row * c;
  for (int j = lane; j < c; j += 32) {
    const float yv = (to_f32(x[j]) - m) * s * to_f32(weight[j]);
    y[j] = from_f32<T>(kLayer ? yv + to_f32(bias[j]) : yv);
  }
  if (lane == 0) {
    if (kLayer) mean[row] = m;
    rstd[row] = s;
  }
}

// Adds v [kN] into acc [kN] (shared or global fp32): one 16-byte access per 4 floats when kN allows.
template <int kN>
__device__ __forceinline__ void add_to(float* acc, const float (&v)[kN]) {
  if constexpr (kN % 4 == 0) {
#pragma unroll
    for (int e = 0; e < kN; e += 4) {
      float4 a = *reinterpret_cast<float4*>(acc + e);
      a.x += v[e], a.y += v[e + 1], a.z += v[e + 2], a.w += v[e + 3];
      *reinterpret_cast<float4*>(acc + e) = a;
    }
  } else {
#pragma unroll
    for (int e = 0; e < kN; ++e) acc[e] += v[e];
  }
}

// One pass over a chunk of rows (one block per chunk, rows in order): per row, the block's threads sum
// Σ dnorm and Σ dnorm·norm over their columns (thread t owns packs t, t + kBlock, ...; kVec columns each),
// the block adds them (warp butterfly, then warps 0..7 in order), and each thread writes dinp for its
// columns and adds dweight/dbias into its own columns of acc, so no two threads touch one column and
// every sum is in a fixed order (no atomics). acc is shared memory, or this chunk's scratch rows when C
// is too wide for it (same arithmetic, same bits). scratch [2, chunks, C] (null: frozen weight).
template <bool kLayer, int kVec, class T>
__global__ void __launch_bounds__(kBlock)
    norm_backward_kernel(T* dinp, float* scratch, const T* dout, const T* inp, const T* weight, const float* mean,
                         const float* rstd, std::int64_t n, int c, std::int64_t chunks, bool acc_in_smem) {
  extern __shared__ float smem[];                // [C] dweight (+ [C] dbias) accumulators when acc_in_smem
  __shared__ float red[2][2][kBlock / 32];       // [row parity][Σ dnorm, Σ dnorm·norm][warp]
  const std::int64_t chunk = blockIdx.x, rows = ceil_div(n, chunks), begin = chunk * rows;
  const std::int64_t end = min(n, begin + rows);  // empty (end <= begin) for the last chunks when rows > 1
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, first = threadIdx.x * kVec, step = kBlock * kVec;
  float* acc_dw = scratch ? (acc_in_smem ? smem : scratch + chunk * c) : nullptr;
  float* acc_db = scratch ? (acc_in_smem ? smem + c : scratch + (chunks + chunk) * c) : nullptr;
  if (acc_dw)
    for (int j = first; j < c; j += step)
      for (int e = 0; e < kVec; ++e) {
        acc_dw[j + e] = 0.0f;
        if (kLayer) acc_db[j + e] = 0.0f;
      }
  for (std::int64_t i = begin; i < end; ++i) {
    const T* dy = dout + i * c;  // [C]
    const T* x = inp + i * c;
    T* dx = dinp + i * c;
    const float m = kLayer ? mean[i] : 0.0f, s = rstd[i];
    float sum_dnorm = 0.0f, sum_dnorm_norm = 0.0f;
    for (int j = first; j < c; j += step) {
      const Pack<T, kVec> dyp = load_pack<kVec>(dy + j), xp = load_pack<kVec>(x + j), wp = load_pack<kVec>(weight + j);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float dnorm = to_f32(dyp.v[e]) * to_f32(wp.v[e]);
        sum_dnorm += dnorm;
        sum_dnorm_norm += dnorm * ((to_f32(xp.v[e]) - m) * s);
      }
    }
    // Two buffers by row parity: a warp writes row i + 2's sums only after every warp passed row i + 1's
    // barrier, so after all reads of row i's.
    const int par = int((i - begin) & 1);
    if (kLayer) sum_dnorm = warp_sum(sum_dnorm);  // RMSNorm subtracts no mean
    sum_dnorm_norm = warp_sum(sum_dnorm_norm);
    if (lane == 0) red[par][0][warp] = sum_dnorm, red[par][1][warp] = sum_dnorm_norm;
    __syncthreads();
    float total_dnorm = 0.0f, total_dnorm_norm = 0.0f;
#pragma unroll
    for (int w = 0; w < kBlock / 32; ++w) total_dnorm += red[par][0][w], total_dnorm_norm += red[par][1][w];
    const float dnorm_mean = kLayer ? total_dnorm / float(c) : 0.0f, dnorm_norm_mean = total_dnorm_norm / float(c);
    for (int j = first; j < c; j += step) {  // the row again, from L1/L2
      const Pack<T, kVec> dyp = load_pack<kVec>(dy + j), xp = load_pack<kVec>(x + j), wp = load_pack<kVec>(weight + j);
      Pack<T, kVec> dxp = load_pack<kVec>(dx + j);
      float dw[kVec], db[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float g = to_f32(dyp.v[e]), norm = (to_f32(xp.v[e]) - m) * s, dnorm = g * to_f32(wp.v[e]);
        dxp.v[e] = from_f32<T>(to_f32(dxp.v[e]) + s * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
        dw[e] = g * norm, db[e] = g;
      }
      store_pack<kVec>(dx + j, dxp);
      if (acc_dw) {
        add_to<kVec>(acc_dw + j, dw);
        if (kLayer) add_to<kVec>(acc_db + j, db);
      }
    }
  }
  if (!acc_dw || !acc_in_smem) return;
  for (int j = first; j < c; j += step)  // this thread's own columns: no barrier needed
    for (int e = 0; e < kVec; ++e) {
      scratch[chunk * c + j + e] = acc_dw[j + e];
      if (kLayer) scratch[(chunks + chunk) * c + j + e] = acc_db[j + e];
    }
}

// dweight [C] += Σ_k scratch[0, k, :], dbias [C] += Σ_k scratch[1, k, :] (dbias null: not summed). Block
// (32 columns, 32 groups): group g sums chunks g, g + 32, ... in order, then group 0 adds groups 1..31 in
// order. 32 groups so that 1,024 chunks are 32 loads per thread, C / 32 blocks of 1,024 threads.
constexpr int kFinishCols = 32, kFinishGroups = 32;

__global__ void __launch_bounds__(kFinishCols* kFinishGroups)
    norm_backward_finish_kernel(float* dweight, float* dbias, const float* scratch, int c, std::int64_t chunks) {
  __shared__ float part[2][kFinishGroups][kFinishCols];
  const int col = threadIdx.x, g = threadIdx.y, j = blockIdx.x * kFinishCols + col;
  float dw = 0.0f, db = 0.0f;
  if (j < c) {
#pragma unroll 4
    for (std::int64_t k = g; k < chunks; k += kFinishGroups) {
      dw += scratch[k * c + j];
      if (dbias) db += scratch[(chunks + k) * c + j];
    }
  }
  part[0][g][col] = dw, part[1][g][col] = db;
  __syncthreads();
  if (g != 0 || j >= c) return;
  for (int h = 1; h < kFinishGroups; ++h) dw += part[0][h][col], db += part[1][h][col];
  dweight[j] += dw;
  if (dbias) dbias[j] += db;
}

// Shared-memory accumulators up to this size (a 96 KiB block still leaves two per SM on an A100 or H100);
// wider rows accumulate in the scratch itself.
constexpr std::int64_t kMaxAccSmemBytes = 96 * 1024;

template <bool kLayer, int kVec, class T>
void launch_norm_backward(T* dinp, float* scratch, const T* dout, const T* inp, const T* weight, const float* mean,
                          const float* rstd, std::int64_t n, std::int64_t c, std::int64_t chunks, cudaStream_t stream) {
  const std::int64_t acc_bytes = (kLayer ? 2 : 1) * c * std::int64_t(sizeof(float));
  const bool acc_in_smem = scratch != nullptr && acc_bytes <= kMaxAccSmemBytes;
  const int smem_bytes = acc_in_smem ? int(acc_bytes) : 0;
  if (smem_bytes > 48 * 1024)  // above the default limit a kernel must opt in
    CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<kLayer, kVec, T>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  norm_backward_kernel<kLayer, kVec, T><<<unsigned(chunks), kBlock, smem_bytes, stream>>>(
      dinp, scratch, dout, inp, weight, mean, rstd, n, int(c), chunks, acc_in_smem);
  CUDA_CHECK(cudaGetLastError());
}

template <bool kLayer, class T>
void norm_backward(T* dinp, float* dweight, float* dbias, float* scratch, const T* dout, const T* inp,
                   const T* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                   cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "norm_backward: bad shape");
  FSDP_CHECK(dweight != nullptr || dbias == nullptr, "norm_backward: a bias gradient without the weight's");
  static_assert(sizeof(T) * kPack16 == 16, "a pack is 16 bytes");
  const std::int64_t chunks = norm_row_chunks(n);
  float* partials = dweight ? scratch : nullptr;  // a frozen weight (LoRA): the input gradient only
  const bool packs = c % kPack16 == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) &&
                     aligned16(weight) && (!partials || aligned16(partials));
  if (packs)
    launch_norm_backward<kLayer, kPack16>(dinp, partials, dout, inp, weight, mean, rstd, n, c, chunks, stream);
  else
    launch_norm_backward<kLayer, 1>(dinp, partials, dout, inp, weight, mean, rstd, n, c, chunks, stream);
  if (!dweight) return;
  const dim3 block(kFinishCols, kFinishGroups);
  norm_backward_finish_kernel<<<unsigned(ceil_div<std::int64_t>(c, kFinishCols)), block, 0, stream>>>(
      dweight, dbias, scratch, int(c), chunks);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace


template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                       std::int64_t n, std::int64_t c, float eps, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "layernorm_forward: bad shape");
  norm_forward_kernel<true, T><<<unsigned(ceil_div<std::int64_t>(n, kBlock / 32)), kBlock, 0, stream>>>(
      out, mean, rstd, inp, weight, bias, n, int(c), eps);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, float* scratch, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                        cudaStream_t stream) {
  norm_backward<true, T>(dinp, dweight, dbias, scratch, dout, inp, weight, mean, rstd, n, c, stream);
}

template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, std::int64_t n, std::int64_t c,
                     float eps, cudaStream_t stream) {
  FSDP_CHECK(n > 0 && c > 0 && c <= (1 << 30), "rmsnorm_forward: bad shape");
  norm_forward_kernel<false, T><<<unsigned(ceil_div<std::int64_t>(n, kBlock / 32)), kBlock, 0, stream>>>(
      out, nullptr, rstd, inp, weight, nullptr, n, int(c), eps);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void rmsnorm_backward(T* dinp, float* dweight, float* scratch, const T* dout, const T* inp,
                      const T* weight, const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  norm_backward<false, T>(dinp, dweight, nullptr, scratch, dout, inp, weight, nullptr, rstd, n, c, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, std::int64_t, std::int64_t, \
                                     float, cudaStream_t);                                                        \
  template void layernorm_backward<T>(T*, float*, float*, float*, const T*, const T*, const T*, const float*,      \
                                      const float*, std::int64_t, std::int64_t, cudaStream_t);                    \
  template void rmsnorm_forward<T>(T*, float*, const T*, const T*, std::int64_t, std::int64_t, float,             \
                                   cudaStream_t);                                                                 \
  template void rmsnorm_backward<T>(T*, float*, float*, const T*, const T*, const T*, const float*, std::int64_t,  \
                                    std::int64_t, cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
