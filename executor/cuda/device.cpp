// executor/cuda/device.cpp — device queries (see device.h). cudaGetDeviceCount returns an error code
// (cudaErrorNoDevice, cudaErrorInsufficientDriver) rather than aborting when no GPU is usable; we clear
// the sticky last error so later calls are not confused by it.
#include "executor/cuda/device.h"

#include <cstdint>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

int device_count() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("no CUDA device was found (cudaGetDeviceCount: {})", cudaGetErrorString(err));
  }
  if (n == 0) return "no CUDA device was found (cudaGetDeviceCount: 0 devices)";
  return "";
}

DeviceInfo device_info(int index) {
  FSDP_CHECK(index >= 0 && index < device_count(), fmt::format("device_info: no CUDA device {}", index));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  d.smem_per_block_optin_bytes = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
  return d;
}

std::string describe(const DeviceInfo& d) {
  return fmt::format("{}, sm_{}{}, {} SMs, {:.1f} GiB, L2 {:.0f} MiB", d.name, d.cc_major, d.cc_minor, d.sm_count,
                     double(d.memory_bytes) / double(1 << 30), double(d.l2_bytes) / double(1 << 20));
}

void configure_default_mem_pool(int index) {
  static std::mutex mu;
  static std::set<int> done;  // devices configured by this process
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(index)) return;
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
  std::uint64_t keep = UINT64_MAX;  // never release to the OS at synchronisations
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int no = 0;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no));
  done.insert(index);
}

}  // namespace fsdpx::cuda
