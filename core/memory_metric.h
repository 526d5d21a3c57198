// core/memory_metric.h — the names of what a peak-memory figure counts, printed wherever a plan or a
// report gives one (issue 31): "allocated" (live tensors, torch.cuda.max_memory_allocated), "reserved"
// (the caching allocator's segments, max_memory_reserved, what torchtitan logs) and "device" (allocated
// plus the allocator's headroom, the CUDA context and NCCL's buffers: nvidia-smi's figure, the one that
// must fit under capacity). Leaves out how each is computed (simulator/reserved_memory.h, cost_models/).
#pragma once

#include <string_view>

namespace fsdpx::memory_metric {

inline constexpr std::string_view kAllocated = "allocated";
inline constexpr std::string_view kReserved = "reserved";
inline constexpr std::string_view kDevice = "device";
// One line for reports: what the "device" figure that plans, the planner and estimate give adds up.
inline constexpr std::string_view kDeviceMeaning =
    "device total: allocated + caching-allocator headroom + CUDA context + NCCL buffers";

}  // namespace fsdpx::memory_metric
