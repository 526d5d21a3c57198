// executor/cuda_backend/cuda_module.h — the boundary of the CUDA backend's shared module
// (libfsdpx_cuda.so, built beside fsdpx): one C-linkage, versioned entry that places the ranks of
// `fsdpx run --backend cuda` (cuda_placement.h), so that the fsdpx binary links no CUDA library and a
// command that never touches a GPU never maps one. Errors come back as a status and a message, never as
// an exception across the boundary. Leaves out loading (executor/session/cuda_module_loader.h).
#pragma once

#include <cstddef>

#include "executor/runtime/rank_placement.h"

namespace fsdpx::cuda {

// The entry's name carries its version: a module built for another boundary is refused at dlsym.
inline constexpr const char* kCudaModuleEntry = "fsdpx_cuda_place_ranks_v1";
inline constexpr const char* kCudaModuleFile = "libfsdpx_cuda.so";

// What the entry returns.
enum class CudaModuleStatus : int { ok = 0, config_error = 2, failure = 1 };

// The request: sizeof(RankPlacement) as the caller sees it, a cheap check that both sides were built
// from the same headers (the module is built with the binary, never shipped on its own).
struct CudaPlaceRequest {
  std::size_t placement_bytes = sizeof(RankPlacement);
  int world_size = 1;
  const char* plan_fingerprint = "";
  bool single_process = false;
};

// On ok, *out holds the placement; otherwise `message` (NUL-terminated, at most message_bytes) says why.
using CudaPlaceRanksFn = int (*)(const CudaPlaceRequest* request, RankPlacement* out, char* message,
                                 std::size_t message_bytes);

}  // namespace fsdpx::cuda
