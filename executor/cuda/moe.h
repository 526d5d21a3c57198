// executor/cuda/moe.h — the row kernels of a mixture-of-experts MLP on the device (T = bf16 or f16 rows,
// fp32 arithmetic; the gather of each routed row from its token is context_attention.h's gather_rows): the
// per-token weighted combine
// of the experts' output rows (MixtralSparseMoeBlock's index_add_ of routing_weights · expert output,
// transformers models/mixtral/modeling_mixtral.py), which also serves backward's gather-sum of the routed
// input gradients, and backward's routed output gradients with the combine weights' gradient. The indices
// come from the host routing (executor/model/moe_routing.h). Each output element is one thread summing in
// a fixed order, so no atomics. Leaves out fusing the gather into the grouped GEMM.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// out [N, C] = (accumulate ? out : 0) + Σ_s weight [N, k][i, s] · y [R, C][rows [N, k][i, s]], the k terms of
// token i summed in s order (the caller lists each token's rows ascending: expert order, as the CPU).
// weight null: every weight 1.
template <class T>
void moe_combine_rows(T* out, const T* y, const std::int32_t* rows, const float* weight, std::int64_t n,
                      std::int64_t k, std::int64_t c, bool accumulate, cudaStream_t stream);

// For routed row r of (token i, slot s), slot_of_row [R] = i·k + s: dy [R, C] = weight [N·k][i·k + s] ·
// dout [N, C][i] and dweight [N·k][i·k + s] = Σ_j dout[i, j] · y [R, C][r, j] (fp32).
template <class T>
void moe_routed_grads(T* dy, float* dweight, const T* dout, const T* y, const std::int32_t* slot_of_row,
                      const float* weight, std::int64_t rows, std::int64_t k, std::int64_t c, cudaStream_t stream);

}  // namespace fsdpx::cuda

// The launchers' explicit instantiations for a storage type T (the kernels' .cu and the emulated twin).
#define FSDPX_MOE_INSTANTIATE(T)                                                                                   \
  template void moe_combine_rows<T>(T*, const T*, const std::int32_t*, const float*, std::int64_t, std::int64_t,  \
                                    std::int64_t, bool, cudaStream_t);                                             \
  template void moe_routed_grads<T>(T*, float*, const T*, const T*, const std::int32_t*, const float*, std::int64_t, \
                                    std::int64_t, std::int64_t, cudaStream_t);
