// cost_models/grad_scaling.h — the GPU work of fp16 loss scaling per optimizer step: one fused pass over
// the rank's reduced gradient shards that multiplies them by 1/scale and flags any inf or NaN (PyTorch's
// _amp_foreach_non_finite_check_and_unscale_, aten/src/ATen/native/cuda/AmpKernels.cu: read and write
// each element in place). Leaves out the scale update (one thread on one element) and the scaling of the
// loss (one element); the flag's all-reduce is a collective of the step program, not a kernel.
#pragma once

#include <vector>

#include "core/dtype.h"
#include "cost_models/compute.h"

namespace fsdpx {

// `local_grad_elements` gradient elements of this rank in `grad_dtype` (the reduced shards the
// optimizer reads): memory-bound, 2 · bytes of HBM traffic, 2 vector FLOPs per element (the multiply and
// the finiteness test).
std::vector<KernelWork> grad_unscale_kernels(double local_grad_elements, DType grad_dtype);

}  // namespace fsdpx
