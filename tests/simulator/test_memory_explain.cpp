// tests/simulator/test_memory_explain.cpp — explain_memory on a plan that runs out of memory (the shipped
// Llama 3.1 8B plan without recompute at micro-batch 2): it names the peak op and micro-batch, and at least
// one suggested change fits, which a fresh simulation of the suggested plan confirms (issue 31).
#include <doctest/doctest.h>

#include "simulator/memory_explain.h"
#include "simulator/simulate.h"

namespace fsdpx {

TEST_CASE("explain_memory names the peak of an out-of-memory plan and a change that fits") {
  Plan plan = load_plan(std::string(FSDPX_CONFIG_DIR_FOR_TESTS) + "/plans/llama3.1-8b-dgx-h100-fsdp8.json");
  plan.recompute.assign(plan.recompute.size(), RecomputeMode::none);
  plan.training.micro_batch = 2;
  validate_plan(plan, "test");
  const MemoryExplanation e = explain_memory(plan);
  REQUIRE(e.peak_bytes > e.capacity_bytes);
  CHECK(e.peak_op.rfind("resident", 0) != 0);
  CHECK(!e.peak_op.empty());
  CHECK(e.peak_micro_batch >= 0);
  REQUIRE(!e.changes.empty());
  const MemoryChange& best = e.changes.front();
  REQUIRE(best.fits);
  MESSAGE("peak at ", e.peak_op, "; first fitting change: ", best.what);
  const Simulation again = simulate(best.plan);
  CHECK(again.peak_memory_total_bytes <= e.capacity_bytes);
  CHECK(again.peak_memory_total_bytes == doctest::Approx(best.peak_bytes));
  for (const MemoryChange& c : e.changes) CHECK(c.fits == (c.peak_bytes <= e.capacity_bytes));
  // The peak in PyTorch's metrics at the same moment: allocated < reserved (the allocator's pools and the
  // eager loss's hole) and allocated < the device total (context, NCCL buffers, headroom).
  CHECK(e.peak_allocated_bytes > 0);
  CHECK(e.peak_allocated_bytes < e.peak_reserved_bytes);
  CHECK(e.peak_allocated_bytes < e.peak_bytes);
}

TEST_CASE("explain_memory offers nothing that does not apply") {
  Plan plan = load_plan(std::string(FSDPX_CONFIG_DIR_FOR_TESTS) + "/plans/llama3.1-8b-dgx-h100-fsdp8.json");
  plan.recompute.assign(plan.recompute.size(), RecomputeMode::full);
  plan.prefetch.forward = plan.prefetch.backward = 0;
  const MemoryExplanation e = explain_memory(plan);
  for (const MemoryChange& c : e.changes) {
    CHECK(c.what.find("recompute") == std::string::npos);  // every block recomputes already
    CHECK(c.what.find("prefetch") == std::string::npos);
  }
}

}  // namespace fsdpx
