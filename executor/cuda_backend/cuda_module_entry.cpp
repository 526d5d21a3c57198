// executor/cuda_backend/cuda_module_entry.cpp — the one exported entry of libfsdpx_cuda.so
// (cuda_module.h): places the ranks with place_cuda_ranks and turns its exceptions into a status and a
// message, so none crosses the dlopen boundary. Compiled into the module only, never into fsdpx.
#include <cstdio>
#include <exception>
#include <string>

#include "core/errors.h"
#include "executor/cuda_backend/cuda_module.h"
#include "executor/cuda_backend/cuda_placement.h"

namespace {

int fail(fsdpx::cuda::CudaModuleStatus status, const char* what, char* message, std::size_t message_bytes) {
  if (message != nullptr && message_bytes > 0) std::snprintf(message, message_bytes, "%s", what);
  return static_cast<int>(status);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int fsdpx_cuda_place_ranks_v1(
    const fsdpx::cuda::CudaPlaceRequest* request, fsdpx::RankPlacement* out, char* message,
    std::size_t message_bytes) {
  using fsdpx::cuda::CudaModuleStatus;
  if (request == nullptr || out == nullptr || request->placement_bytes != sizeof(fsdpx::RankPlacement))
    return fail(CudaModuleStatus::failure, "the CUDA module was built from other headers than this fsdpx", message,
                message_bytes);
  try {
    *out = fsdpx::cuda::place_cuda_ranks(request->world_size, request->plan_fingerprint, request->single_process);
    return static_cast<int>(CudaModuleStatus::ok);
  } catch (const fsdpx::ConfigError& e) {
    return fail(CudaModuleStatus::config_error, e.what(), message, message_bytes);
  } catch (const std::exception& e) {
    return fail(CudaModuleStatus::failure, e.what(), message, message_bytes);
  }
}
