// tests/cuda/emulated/kernels_moe.cpp — host launchers of executor/cuda/moe.h's row kernels for the emulated
// runtime: each enqueues its work on the stream and computes in fp32 between a load and a store in the
// element type (elem.h), summing in the order the CPU MoE MLP does (executor/model/moe_mlp.cpp: a token's
// routed rows in expert order; a row's dot product over the channels in order), so the float model follows
// the CPU within rounding. Leaves out the device kernels' warp-sum order.
#include <cstdint>
#include <vector>

#include "executor/cuda/moe.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::from_f32;
using emu::to_f32;

template <class T>
void moe_combine_rows(T* out, const T* y, const std::int32_t* rows, const float* weight, std::int64_t n,
                      std::int64_t k, std::int64_t c, bool accumulate, cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> acc(static_cast<std::size_t>(c));
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < c; ++j) acc[std::size_t(j)] = accumulate ? to_f32(out[i * c + j]) : 0.0f;
      for (std::int64_t s = 0; s < k; ++s) {
        const float w = weight ? weight[i * k + s] : 1.0f;
        const T* row = y + std::int64_t(rows[i * k + s]) * c;
        for (std::int64_t j = 0; j < c; ++j) acc[std::size_t(j)] += w * to_f32(row[j]);
      }
      for (std::int64_t j = 0; j < c; ++j) out[i * c + j] = from_f32<T>(acc[std::size_t(j)]);
    }
  });
}

template <class T>
void moe_routed_grads(T* dy, float* dweight, const T* dout, const T* y, const std::int32_t* slot_of_row,
                      const float* weight, std::int64_t rows, std::int64_t k, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t slot = slot_of_row[r], i = slot / k;
      float dot = 0.0f;
      for (std::int64_t j = 0; j < c; ++j) {
        const float g = to_f32(dout[i * c + j]);
        dy[r * c + j] = from_f32<T>(weight[slot] * g);
        dot += g * to_f32(y[r * c + j]);
      }
      dweight[slot] = dot;
    }
  });
}

FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_MOE_INSTANTIATE)

}  // namespace fsdpx::cuda
