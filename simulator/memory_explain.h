// simulator/memory_explain.h — "why does this plan run out of memory?": the op and micro-batch at the
// simulated peak, what is live then by category, and the plan changes that would bring the peak under
// the GPU's capacity (recompute, micro-batch, reshard after forward, prefetch, more shards), each one
// simulated, cheapest in step time first. Leaves out a breakdown by unit (the engine keeps live bytes
// per category, not per unit) and CPU offload (no target runs it).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/plan.h"
#include "program/step_program.h"

namespace fsdpx {

struct MemoryChange {
  std::string what;  // "recompute full on every block", "micro-batch 2 -> 1", ...
  Plan plan;
  double peak_bytes = 0;  // device total (core/memory_metric.h), simulated, with the allocator's reserve
  double step_time_s = 0;
  bool fits = false;      // peak_bytes <= capacity
};

struct MemoryExplanation {
  double capacity_bytes = 0;  // the GPU's memory
  // The peak in each metric (core/memory_metric.h): the device total is what `fits` and the changes
  // compare with capacity; allocated and reserved are PyTorch's figures at the same moment.
  double peak_bytes = 0;            // device total, simulated, with the allocator's reserve
  double peak_allocated_bytes = 0;  // live tensors (the device total less "other")
  double peak_reserved_bytes = 0;   // the caching allocator's segments (simulator/reserved_memory.h)
  std::array<double, kMemCategoryCount> peak_by_category{};
  std::string peak_op;        // e.g. "bwd.s33.mb1"
  int peak_micro_batch = -1;  // -1: an op of no micro-batch (the optimizer step, a reduction)
  int peak_stage = 0;         // pipeline rank
  double step_time_s = 0;
  std::vector<MemoryChange> changes;  // every candidate tried: fitting ones first, then by step time
};

// Simulates `plan` and each single change that applies to it (and, when none fits alone, full
// recompute with micro-batch 1).
MemoryExplanation explain_memory(const Plan& plan);

}  // namespace fsdpx
