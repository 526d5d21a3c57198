// simulator/reserved_memory.h — a simulated step's peak in PyTorch's caching allocator's reserved bytes
// (torch.cuda.max_memory_reserved, what torchtitan logs as "memory"): the simulated allocation peak split
// into the allocator's per-stream pools (cost_models/caching_allocator.h) for FSDP2, plus the eager
// loss's hole. Leaves out fragmentation among activations and the CUDA context and NCCL buffers, which
// the allocator does not own.
#pragma once

#include "core/plan.h"
#include "cost_models/caching_allocator.h"
#include "simulator/simulate.h"

namespace fsdpx {

struct ReservedMemory {
  StreamPoolBytes pools;
  double bytes = 0;  // reserved_bytes(pools)
};

// At the simulated peak's role; `sim` must come from simulate(plan).
ReservedMemory reserved_memory(const Plan& plan, const Simulation& sim);

}  // namespace fsdpx
