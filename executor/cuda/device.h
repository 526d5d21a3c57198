// executor/cuda/device.h — what CUDA devices this process sees, without aborting when there are none:
// a machine without a driver or GPU (CI, the developer box) reports 0 devices and a reason string, so
// GPU tests can skip (exit 77) and the CLI can say why `--backend cuda` is unavailable.
// Leaves out device selection policy (one rank per device is the runtime's business).
#pragma once

#include <cstdint>
#include <string>

namespace fsdpx::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t smem_per_block_optin_bytes = 0;
};

// Number of visible CUDA devices; 0 (never an abort) when cudaGetDeviceCount fails.
int device_count();

// "" when a device is present, else "no CUDA device was found (cudaGetDeviceCount: <error>)".
std::string cuda_unavailable_reason();

// Properties of device `index` (0 <= index < device_count(); checked).
DeviceInfo device_info(int index);

// One line: "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB".
std::string describe(const DeviceInfo& d);

// Sets up device `index`'s default stream-ordered memory pool (cudaMallocAsync) once per process: the
// release threshold raised to "never" (with the default 0 every synchronisation returns the freed
// memory and the next step maps it again; CUDA programming guide, "Stream Ordered Memory Allocator",
// physical page caching behavior), and no reuse through internal dependencies (the pool would otherwise
// make, say, a prefetch all-gather's allocation wait on the compute stream that freed the block).
void configure_default_mem_pool(int index);

}  // namespace fsdpx::cuda
