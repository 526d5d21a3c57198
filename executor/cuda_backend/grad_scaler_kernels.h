// executor/cuda_backend/grad_scaler_kernels.h — fp16 loss scaling on the device: one in-place pass over an
// fp32 gradient shard that multiplies it by 1/scale and flags any inf or NaN, as PyTorch's
// _amp_foreach_non_finite_check_and_unscale_ (aten/src/ATen/native/cuda/AmpKernels.cu) does. Leaves out the
// scale update: the runtime keeps the scale on the host (executor/runtime/loss_scaler.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace fsdpx::cuda {

// g [n] *= inv_scale (skipped when inv_scale is 1); *found_inf = 1 when some g[i] was an inf or a NaN.
void unscale_check_finite(float* g, std::int64_t n, float inv_scale, int* found_inf, cudaStream_t stream);

}  // namespace fsdpx::cuda
