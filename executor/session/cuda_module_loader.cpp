// executor/session/cuda_module_loader.cpp — finds, dlopens and calls the CUDA backend's module
// (see cuda_module_loader.h). FSDPX_CUDA_MODULE_RELDIR (set by executor/CMakeLists.txt where the
// module is built) is the installed module folder relative to the installed binary's.
#include "executor/session/cuda_module_loader.h"

#include <dlfcn.h>

#include <array>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda_backend/cuda_module.h"

namespace fsdpx {

namespace {

#if defined(FSDPX_CUDA_MODULE_RELDIR)
std::string exe_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// The first candidate that exists; empty when none does.
std::string find_module() {
  for (const std::string& p : cuda_module_candidates(exe_dir(), FSDPX_CUDA_MODULE_RELDIR)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return "";
}
#endif

}  // namespace

std::vector<std::string> cuda_module_candidates(const std::string& dir, const std::string& installed_relative_dir) {
  std::vector<std::string> out{(std::filesystem::path(dir) / cuda::kCudaModuleFile).string()};
  if (!installed_relative_dir.empty())
    out.push_back(
        (std::filesystem::path(dir) / installed_relative_dir / cuda::kCudaModuleFile).lexically_normal().string());
  return out;
}

RankPlacement place_cuda_ranks_from_module_at(const std::string& path, int world_size, const std::string& fingerprint,
                                              bool single_process) {
  // RTLD_NOW: a missing CUDA library or symbol is said here, not at the first kernel.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw ConfigError(fmt::format("--backend cuda: cannot load the CUDA backend {}: {}", path, ::dlerror()));
  auto entry = reinterpret_cast<cuda::CudaPlaceRanksFn>(::dlsym(handle, cuda::kCudaModuleEntry));
  if (entry == nullptr)
    throw ConfigError(fmt::format("--backend cuda: {} has no entry {} (a module of another fsdpx version)", path,
                                  cuda::kCudaModuleEntry));
  const cuda::CudaPlaceRequest request{sizeof(RankPlacement), world_size, fingerprint.c_str(), single_process};
  RankPlacement placement;
  std::array<char, 1024> message{};
  const auto status = static_cast<cuda::CudaModuleStatus>(entry(&request, &placement, message.data(), message.size()));
  if (status == cuda::CudaModuleStatus::ok) return placement;
  if (status == cuda::CudaModuleStatus::config_error) throw ConfigError(message.data());
  throw std::runtime_error(fmt::format("--backend cuda: {}", message.data()));
}

RankPlacement place_cuda_ranks_from_module(int world_size, const std::string& fingerprint, bool single_process) {
#if defined(FSDPX_CUDA_MODULE_RELDIR)
  const std::string path = find_module();
  if (path.empty())
    throw ConfigError(fmt::format("--backend cuda: this fsdpx has no CUDA backend: {} is neither beside it in {} nor "
                                  "in its installed folder {}",
                                  cuda::kCudaModuleFile, exe_dir(), FSDPX_CUDA_MODULE_RELDIR));
  return place_cuda_ranks_from_module_at(path, world_size, fingerprint, single_process);
#else
  (void)world_size, (void)fingerprint, (void)single_process;
  throw ConfigError("--backend cuda: no CUDA device was found: this fsdpx was built without CUDA (nvcc not found)");
#endif
}

}  // namespace fsdpx
