// executor/cuda/types.h — host-includable types for the CUDA launchers: bf16 storage type and the
// stream type. Every launcher takes device pointers and a stream and returns immediately (async).
// Leaves out fp16 and fp8 storage.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

namespace fsdpx::cuda {
using bf16 = __nv_bfloat16;
}  // namespace fsdpx::cuda
