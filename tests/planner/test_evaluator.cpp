// tests/planner/test_evaluator.cpp — the evaluator's probe starts (planner/candidates.h): a pipelined plan
// whose like plan (the same configured plan with another recompute pattern) was simulated before is
// simulated whole at once where that plan's probes found no window within the step and its first probe is
// at least 1/8 of the step, with the figures a fresh evaluation gives and one lowering; otherwise it runs
// its own probes.
#include <doctest/doctest.h>

#include "core/config_paths.h"
#include "core/plan.h"
#include "planner/candidates.h"
#include "program/lower.h"
#include "simulator/steady_state_pipeline.h"

namespace fsdpx {

namespace {

// The 70B pp 4 1F1B plan of test_steady_state_pipeline (its first 3 blocks fully recomputed): at 168
// micro-batches its probes of 8, 16 and 32 predict the lock-in and the probe of 112 repeats; at 164 and
// at 48 no probe repeats within the step (nor do they line up).
Plan plan_70b(std::int64_t micro_batches) {
  return with_micro_batches(load_plan(FSDPX_TEST_DATA_DIR "/plans/llama3.1-70b-dgx-h100x512-pp4-tp4-1f1b.json"),
                            micro_batches);
}

// The same configured plan with one more block fully recomputed.
Plan like(Plan p) {
  for (RecomputeMode& r : p.recompute)
    if (r != RecomputeMode::full) {
      r = RecomputeMode::full;
      break;
    }
  return p;
}

// `at_once`: the like plan is simulated whole with one lowering; else it lowers as often as a fresh
// evaluation (its own probes).
void check_like_plan(std::int64_t micro_batches, bool at_once) {
  SearchCounts counts;
  Evaluator ev(1e300, counts);
  const Plan a = plan_70b(micro_batches), b = like(a);
  REQUIRE(plan_key(a) != plan_key(b));
  CHECK(plan_key(a, false) == plan_key(b, false));
  ev.run(a, WrapPolicy::per_block, "a");
  const std::int64_t before = lower_call_count();
  const Candidate started = ev.run(b, WrapPolicy::per_block, "b");
  const std::int64_t between = lower_call_count();
  const Candidate fresh = evaluate_plan(b, 1e300, WrapPolicy::per_block, "b");
  const std::int64_t fresh_lowerings = lower_call_count() - between;
  MESSAGE(micro_batches << " micro-batches: " << between - before << " lowerings, fresh " << fresh_lowerings);
  CHECK(between - before == (at_once ? 1 : fresh_lowerings));
  CHECK(counts.simulated == 2);
  CHECK(started.metrics.step_time_s == fresh.metrics.step_time_s);
  CHECK(started.metrics.peak_memory_bytes == fresh.metrics.peak_memory_bytes);
  CHECK(started.metrics.compute_s == doctest::Approx(fresh.metrics.compute_s).epsilon(1e-12));
  CHECK(started.metrics.mfu == doctest::Approx(fresh.metrics.mfu).epsilon(1e-12));
}

}  // namespace

// At 48 the first probe (8) is more than 1/8 of the step and the like plan is simulated whole at once;
// at 164 it is a smaller share and the like plan runs its own probes (speed13 X2: the probes of a plan
// that recomputes less can find its window in a small share of the step).
TEST_CASE("a like plan is simulated whole at once where the last one's probes did not repeat") {
  SUBCASE("48 micro-batches: the whole step alone") { check_like_plan(48, true); }
  SUBCASE("164 micro-batches: its own probes, the first being under 1/8 of the step") { check_like_plan(164, false); }
  SUBCASE("168 micro-batches: its own probes") { check_like_plan(168, false); }
}

}  // namespace fsdpx
