// executor/cuda_backend/cuda_moe_buffers.h — what a CUDA MoE block keeps from its forward and its backward
// scratch (cuda_moe_mlp.h): the host routing (executor/model/moe_routing.h, shared with the CPU) and the
// routed rows on the device, with the row indices the kernels read (executor/cuda/moe.h). The experts'
// side is R rows, known only after the ep group's count exchange, so its buffers grow in the forward or
// backward that first needs more (allocate sizes them for ep 1). Leaves out a pooled allocator.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/moe_dims.h"

namespace fsdpx::cuda {

template <class T>
struct CudaMoeActs : MoeRoutes<float> {
  DeviceBuffer<float> logits;                  // [N, E] router logits (fp32 GEMM output)
  DeviceBuffer<T> xr, y;                       // [N·k, C] routed inputs, their experts' outputs (token side)
  DeviceBuffer<T> ex_x, ex_y;                  // [R, C] the experts' side (ep > 1; at ep 1 xr and y serve)
  DeviceBuffer<T> h, act;                      // [R, 2F] up outputs [gate | up], [R, F] SwiGLU
  DeviceBuffer<T> sh_h, sh_act;                // [N, 2·SF], [N, SF] the shared expert's
  DeviceBuffer<std::int64_t> token_of_row;     // [N·k] the token of each routed row (the gather)
  DeviceBuffer<std::int32_t> slot_of_row;      // [N·k] its (token, slot) index i·k + s
  DeviceBuffer<std::int32_t> combine_rows;     // [N, k] each token's routed rows, ascending (expert order)
  DeviceBuffer<float> slot_weight;             // [N, k] combine weights by (token, slot)
  DeviceBuffer<float> combine_weight;          // [N, k] the same in combine_rows' order
  void allocate(const MoeDims& d);
  std::int64_t bytes() const;
};

template <class T>
struct CudaMoeScratch {
  DeviceBuffer<T> dy, dxr;                     // [N·k, C] routed output and input gradients (token side)
  DeviceBuffer<T> ex_dy, ex_dx;                // [R, C] the experts' side (ep > 1)
  DeviceBuffer<T> dact, dh;                    // [R, F], [R, 2F]
  DeviceBuffer<T> sh_dact, sh_dh;              // [N, SF], [N, 2·SF]
  DeviceBuffer<T> dlogits;                     // [N, E] the router's output gradient (uploaded)
  DeviceBuffer<float> dweight;                 // [N·k] d loss / d combine weight
  std::vector<float> dprobs, dlogits_host;     // [N, E] the host router backward's
  void allocate(const MoeDims& d);
  std::int64_t bytes() const;
};

// b holds at least n elements: a smaller one is replaced after `stream` (its only user) is idle.
template <class U>
void ensure_elems(DeviceBuffer<U>& b, std::int64_t n, cudaStream_t stream) {
  if (b.size() >= n) return;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  b = DeviceBuffer<U>(n);
}

}  // namespace fsdpx::cuda
