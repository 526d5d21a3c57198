// tests/cuda/emulated/emu_stream.h — the emulated device's one entry point for work: enqueue a host
// function on a stream (null: the legacy default stream). It runs on that stream's own thread, in order,
// after a random 0-300 us delay, so two streams overlap unless an event orders them (cuda_streams.cpp).
// The emulated kernels (kernels_*.cpp, gemm.cpp), memory calls and NCCL use it. Leaves out priorities.
#pragma once

#include <functional>

#include <cuda_runtime_api.h>

namespace fsdpx::cuda::emu {

void enqueue(cudaStream_t stream, std::function<void()> op);
// Waits until `stream` (null: the legacy stream) is idle.
void synchronize_stream(cudaStream_t stream);
// Waits until every stream of the device is idle (cudaDeviceSynchronize).
void synchronize_device();

}  // namespace fsdpx::cuda::emu
