// core/executor_device.h — which executor backend runs a plan: the CPU reference backend or CUDA. What
// each runs is its row in core/backend_capabilities.h. Leaves out several devices per rank.
#pragma once

namespace fsdpx {

enum class ExecutorDevice { cpu, cuda };
inline const char* executor_device_name(ExecutorDevice d) { return d == ExecutorDevice::cuda ? "cuda" : "cpu"; }

}  // namespace fsdpx
