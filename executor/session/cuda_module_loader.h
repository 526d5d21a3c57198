// executor/session/cuda_module_loader.h — `fsdpx run --backend cuda` loads the CUDA backend on demand:
// the shared module libfsdpx_cuda.so (executor/cuda_backend/cuda_module.h), found beside the running
// binary (/proc/self/exe) or in its installed library folder, is dlopened only when a run asks for the
// GPU, so every other command starts without mapping a CUDA library. Leaves out unloading (the module
// stays mapped for the process's life: its backends run the training).
#pragma once

#include <string>
#include <vector>

#include "executor/runtime/rank_placement.h"

namespace fsdpx {

// Where the module is looked for, in order: `<dir of the binary>/libfsdpx_cuda.so`, then the installed
// library folder relative to the binary (empty `installed_relative_dir`: none).
std::vector<std::string> cuda_module_candidates(const std::string& exe_dir, const std::string& installed_relative_dir);

// Loads the module and places the ranks (cuda::place_cuda_ranks). Throws ConfigError (one line, exit 2)
// when this fsdpx has no CUDA module, when it or a CUDA library it needs cannot be loaded, or when
// placing fails on input (no device, a launcher's world size); std::runtime_error on other failures.
RankPlacement place_cuda_ranks_from_module(int world_size, const std::string& plan_fingerprint, bool single_process);

// Same, with the module's path given (tests: a missing or broken module).
RankPlacement place_cuda_ranks_from_module_at(const std::string& module_path, int world_size,
                                              const std::string& plan_fingerprint, bool single_process);

}  // namespace fsdpx
