// executor/runtime/memory_tracker.h — live bytes per memory category on one rank, with the simulator's
// categories (program/step_program.h MemCategory): params = sharded fp32 masters, grads = sharded
// gradient accumulators, optimizer = Adam m and v, activations = what the model saves from a segment's
// forward to its backward, transient = unsharded unit parameters and gradients plus working buffers.
// Records the categories at the moment the total peaks (as the simulator reports its peak). Leaves out
// allocator overheads: the CPU model preallocates its buffers, so this counts liveness, not malloc.
#pragma once

#include <algorithm>
#include <array>

#include "core/errors.h"
#include "program/step_program.h"

namespace fsdpx {

class MemoryTracker {
 public:
  void alloc(MemCategory c, double bytes) {
    live_[std::size_t(c)] += bytes;
    total_ += bytes;
    if (total_ > peak_total_) peak_total_ = total_, at_peak_ = live_;
  }
  void free(MemCategory c, double bytes) {
    live_[std::size_t(c)] -= bytes;
    total_ -= bytes;
    FSDP_CHECK(live_[std::size_t(c)] >= -0.5, "MemoryTracker: more bytes freed than allocated");
  }
  double peak_total_bytes() const { return peak_total_; }
  // Live bytes of each category at the moment the total peaked.
  const std::array<double, kMemCategoryCount>& at_peak() const { return at_peak_; }
  double live_bytes(MemCategory c) const { return live_[std::size_t(c)]; }

 private:
  std::array<double, kMemCategoryCount> live_{};
  std::array<double, kMemCategoryCount> at_peak_{};
  double total_ = 0, peak_total_ = 0;
};

}  // namespace fsdpx
