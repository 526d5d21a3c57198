// tests/cuda/emulated/kernels_update.cpp — host launchers of the CUDA backend's element-wise kernels for the
// emulated runtime: AdamW (executor/runtime/adamw.cpp, the CPU runtime's update), casts and padding, the
// bias gradient, the device communicator's rank-order sum, the units' gradient bookkeeping and the fp16
// unscale pass (executor/cpu/fp16.h). Each runs on its stream in the launcher's order of operations.
// Leaves out the device kernels' block-wise summation trees (Σ g² is one ordered pass in double here).
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "core/plan.h"
#include "executor/cpu/fp16.h"
#include "executor/cuda/adamw.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/rank_sum.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/cuda_backend/grad_scaler_kernels.h"
#include "executor/runtime/adamw.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::from_f32;
using emu::to_f32;

template <class T>
void adamw_update(const AdamWArgs& a, float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                  T* params_16, std::int64_t n, cudaStream_t stream) {
  FSDP_CHECK(a.t >= 1 && n >= 0, "adamw_update: t must be >= 1");
  if (n == 0) return;
  OptimizerSettings o;
  o.beta1 = a.beta1, o.beta2 = a.beta2, o.eps = a.eps, o.weight_decay = a.weight_decay;
  const AdamWStep s{double(a.lr), a.t, double(a.grad_scale)};
  enqueue(stream, [=] {
    fsdpx::adamw_update(o, s, params, exp_avg, exp_avg_sq, grads, n);
    if (params_16)
      for (std::int64_t i = 0; i < n; ++i) params_16[i] = from_f32<T>(params[i]);
  });
}

void cast_f32_to_bf16(bf16* out, const float* inp, std::int64_t n, cudaStream_t stream) {
  cast_f32_to_16<bf16>(out, inp, n, stream);
}

template <class T>
void cast_f32_to_16(T* out, const float* inp, std::int64_t n, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(inp[i]);
  });
}

void round_through_f16(float* x, std::int64_t n, cudaStream_t stream) {
  enqueue(stream, [=] { cpu::round_to_fp16(x, n); });
}

void cast_bf16_to_f32(float* out, const bf16* inp, std::int64_t n, bool accumulate, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = 0; i < n; ++i) out[i] = (accumulate ? out[i] : 0.0f) + to_f32(inp[i]);
  });
}

void pad_columns_bf16(bf16* dst, const bf16* src, std::int64_t rows, std::int64_t src_cols, std::int64_t dst_cols,
                      cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < dst_cols; ++c)
        dst[r * dst_cols + c] = c < src_cols ? src[r * src_cols + c] : from_f32<bf16>(0.0f);
  });
}

void zero_tail_bf16(bf16* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = valid; i < padded; ++i) buf[i] = from_f32<bf16>(0.0f);
  });
}

void zero_tail_f32(float* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = valid; i < padded; ++i) buf[i] = 0.0f;
  });
}

// Rows in order per column, as cpu::matmul_backward_dw's bias sum.
template <class T>
void bias_backward(float* dbias, float*, const T* dout, std::int64_t n, std::int64_t oc, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t o = 0; o < oc; ++o) dbias[o] += to_f32(dout[i * oc + o]);
  });
}

template <class T>
void sum_in_rank_order_t(T* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t s) {
  if (count == 0) return;
  enqueue(s, [=] {
    for (std::int64_t i = 0; i < count; ++i) {
      float acc = to_f32(static_cast<const T*>(in.ptr[0])[offset + i]);
      for (int j = 1; j < in.n; ++j) acc += to_f32(static_cast<const T*>(in.ptr[j])[offset + i]);
      out[i] = from_f32<T>(acc);
    }
  });
}
void sum_in_rank_order(float* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t s) {
  sum_in_rank_order_t(out, in, offset, count, s);
}
void sum_in_rank_order(bf16* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t s) {
  sum_in_rank_order_t(out, in, offset, count, s);
}

void accumulate_check_finite(float* acc, const float* add, std::int64_t n, int* non_finite, cudaStream_t stream) {
  enqueue(stream, [=] {
    bool bad = false;
    for (std::int64_t i = 0; i < n; ++i) {
      bad = bad || !std::isfinite(add[i]);
      acc[i] += add[i];
    }
    if (bad && non_finite) *non_finite = 1;
  });
}

std::int64_t sum_squares_scratch_elems() { return 1; }  // unused here

void sum_squares(const float* x, std::int64_t n, double*, double* out, bool accumulate, cudaStream_t stream) {
  enqueue(stream, [=] {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
    *out = (accumulate ? *out : 0.0) + s;
  });
}

void unscale_check_finite(float* g, std::int64_t n, float inv_scale, int* found_inf, cudaStream_t stream) {
  enqueue(stream, [=] {
    if (cpu::unscale_and_check(g, n, inv_scale)) *found_inf = 1;
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                       \
  template void adamw_update<T>(const AdamWArgs&, float*, float*, float*, const float*, T*, std::int64_t,          \
                                cudaStream_t);                                                                     \
  template void cast_f32_to_16<T>(T*, const float*, std::int64_t, cudaStream_t);                                   \
  template void bias_backward<T>(float*, float*, const T*, std::int64_t, std::int64_t, cudaStream_t);
FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
