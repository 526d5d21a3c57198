// cost_models/grad_scaling.cpp — the unscale and inf-check pass of fp16 loss scaling (see grad_scaling.h).
#include "cost_models/grad_scaling.h"

#include "core/errors.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {

std::vector<KernelWork> grad_unscale_kernels(double local_grad_elements, DType grad_dtype) {
  FSDP_CHECK(local_grad_elements >= 0, "grad_unscale_kernels: negative gradient count");
  const double bytes = local_grad_elements * dtype_bytes(grad_dtype);
  constexpr double kFlopsPerElement = 2;  // x · inv_scale and isfinite(x)
  return {compute_detail::vector_kernel("unscale_inf_check", kFlopsPerElement * local_grad_elements, bytes, bytes)};
}

}  // namespace fsdpx
