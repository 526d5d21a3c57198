// tests/executor/test_unit_lifecycle.cpp — the unit bookkeeping both backends share
// (executor/runtime/unit_lifecycle.h): which buffers are alive after each transition and the bytes
// each leaves in the MemoryTracker, for a sharded unit with and without a kept copy and for DDP.
#include <doctest/doctest.h>

#include "executor/runtime/unit_lifecycle.h"

namespace fsdpx {
namespace {

FlatUnitLayout unit(std::int64_t padded, std::int64_t shard) {
  FlatUnitLayout f;
  f.modules = {0};
  f.module_offsets = {0};
  f.numel = padded - 1;
  f.padded_numel = padded;
  f.shard_numel = shard;
  return f;
}

TEST_CASE("unit lifecycle: gather, partial reshard, gather of the kept copy, gradients") {
  MemoryTracker mem;
  UnitLifecycle u("test", unit(8, 2), false, 2.0, &mem);  // 16-bit parameters, 4 shards
  CHECK(mem.live_bytes(MemCategory::transient) == 0);
  CHECK(u.gather(4));  // sharded: the caller allocates the unsharded buffer
  CHECK(u.params_live());
  CHECK(mem.live_bytes(MemCategory::transient) == 16);
  CHECK(u.release(2, 1) == 4);  // half of the unit stays for backward
  CHECK_FALSE(u.params_live());
  CHECK(u.kept_bytes() == 8);
  CHECK(mem.live_bytes(MemCategory::transient) == 8);
  CHECK(u.gather_kept(2) == 4);
  CHECK(u.params_live());
  CHECK(u.kept_numel() == 0);
  CHECK(mem.live_bytes(MemCategory::transient) == 16);
  CHECK(u.release(0, 0) == 0);
  CHECK(mem.live_bytes(MemCategory::transient) == 0);
  CHECK(u.touch_grads());        // comes alive now: the caller zeroes it
  CHECK_FALSE(u.touch_grads());  // already alive: accumulate
  CHECK(mem.live_bytes(MemCategory::transient) == 32);
  CHECK(u.end_grads());  // freed after its reduction
  CHECK_FALSE(u.grads_live());
  CHECK(mem.live_bytes(MemCategory::transient) == 0);
  CHECK(mem.peak_total_bytes() == 32);
}

TEST_CASE("unit lifecycle: a replicated unit (DDP) keeps its unsharded buffers") {
  MemoryTracker mem;
  UnitLifecycle u("test", unit(6, 6), true, 4.0, &mem);
  CHECK(u.params_live());
  CHECK(u.grads_live());
  CHECK(mem.live_bytes(MemCategory::params) == 24);
  CHECK(mem.live_bytes(MemCategory::grads) == 24);
  CHECK_FALSE(u.gather(1));      // nothing to allocate
  CHECK_FALSE(u.touch_grads());  // alive all run
  CHECK_FALSE(u.end_grads());    // zeroed, not freed
  CHECK(u.grads_live());
  CHECK(mem.live_bytes(MemCategory::transient) == 0);
}

}  // namespace
}  // namespace fsdpx
