// tests/planner/test_search.cpp — the search against brute force on small spaces (every plan of the
// space simulated directly), the memory lower bound against simulated peaks, the exit-2 path, plan
// JSON round-trips, determinism and the Pareto frontier's definition.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "planner/memory_bound.h"
#include "planner/planner.h"
#include "planner/shapes.h"
#include "simulator/simulate.h"

namespace fsdpx {

namespace {

PlanRequest request(const std::string& model, const std::string& cluster, int world, std::int64_t seq, std::int64_t batch) {
  PlanRequest r;
  r.model = load_model(model);
  r.cluster = load_cluster(cluster);
  if (world <= r.cluster.gpus_per_node) r.cluster.gpus_per_node = world;
  else r.cluster.nodes = world / r.cluster.gpus_per_node;
  r.seq = seq;
  r.global_batch = batch;
  return r;
}

// Only the stage-1 dimensions: every plan is shape x micro-batch x uniform recompute, per-block k1.
void shapes_only(PlanRequest& r) {
  r.space.blocks_per_unit = {1};
  r.space.fsdp1_min_params.clear();
  r.space.try_simplefsdp_auto = false;
  r.space.prefetch_depths = {1};
  r.space.all_gather_caps = {2};
  r.space.reduce_dtypes = {DType::fp32};
  r.space.shapes_to_simulate = 1000;
}

struct Brute {
  double best_tps = 0;
  double least_peak_bytes = 1e300;
  int fitting = 0;
};

// Simulates every plan of the shapes-only space directly (not through the planner).
Brute brute_force(const PlanRequest& r, double limit_bytes) {
  Brute b;
  EngineOptions o;
  o.record_ops = false;
  for (const Parallelism& par : parallel_shapes(r))
    for (std::int64_t mb : micro_batch_choices(r, par.data_parallel_ranks()))
      for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::selective, RecomputeMode::selective_op,
                                 RecomputeMode::full}) {
        const Simulation s = simulate(shape_plan(r, par, mb, rc), o);
        b.least_peak_bytes = std::min(b.least_peak_bytes, s.peak_memory_total_bytes);
        if (s.peak_memory_total_bytes > limit_bytes) continue;
        ++b.fitting;
        b.best_tps = std::max(b.best_tps, s.tokens_per_s_per_gpu);
      }
  return b;
}

}  // namespace

TEST_CASE("the search finds the brute-force optimum of small spaces") {
  struct Case { const char* model; const char* cluster; int world; std::int64_t seq, batch; double limit_gib; };
  for (const Case& c : {Case{"llama-tiny", "cpu", 4, 64, 8, 16}, Case{"llama3.1-8b", "dgx-h100", 8, 4096, 16, 80},
                        Case{"llama3.1-8b", "dgx-h100", 8, 8192, 8, 40}}) {
    CAPTURE(c.model);
    CAPTURE(c.limit_gib);
    PlanRequest r = request(c.model, c.cluster, c.world, c.seq, c.batch);
    shapes_only(r);
    r.memory_limit_bytes = c.limit_gib * 1024 * 1024 * 1024;
    const Brute b = brute_force(r, *r.memory_limit_bytes);
    REQUIRE(b.fitting > 0);
    // Stage 2 may only add plans (recompute on the first k blocks); compare on the uniform optimum.
    r.space.shapes_to_refine = 0;
    const PlanResult res = search_plans(r);
    REQUIRE(res.best.has_value());
    INFO("planner " << res.best->metrics.tokens_per_s_per_gpu << " vs brute force " << b.best_tps);
    CHECK(res.best->metrics.tokens_per_s_per_gpu == doctest::Approx(b.best_tps).epsilon(1e-12));
    // Objective memory: the least peak among fitting plans.
    r.objective = Objective::memory;
    const PlanResult mem = search_plans(r);
    REQUIRE(mem.best.has_value());
    CHECK(mem.best->metrics.peak_memory_bytes == doctest::Approx(b.least_peak_bytes).epsilon(1e-12));
  }
}

TEST_CASE("the memory lower bound never exceeds the simulated peak") {
  EngineOptions o;
  o.record_ops = false;
  int checked = 0;
  for (const char* model : {"llama-tiny", "llama3.1-8b", "gpt2-124m"}) {
    PlanRequest r = request(model, "dgx-h100", 16, 1024, 32);
    for (const Parallelism& par : parallel_shapes(r))
      for (std::int64_t mb : micro_batch_choices(r, par.data_parallel_ranks()))
        for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::selective, RecomputeMode::selective_op,
                                 RecomputeMode::full}) {
          const Plan p = shape_plan(r, par, mb, rc);
          const double bound = memory_lower_bound(p).total();
          const double peak = simulate(p, o).peak_memory_total_bytes;
          INFO(model << " tp " << par.tp << " cp " << par.cp << " dp " << par.dp_replicate << "x" << par.dp_shard << " mb "
                     << mb << ": bound " << bound << " peak " << peak);
          CHECK(bound <= peak);
          CHECK(bound >= 0.3 * peak);  // and is not vacuous
          ++checked;
        }
  }
  CHECK(checked > 100);
}

TEST_CASE("an impossible request reports the least memory any plan needs and what would fit") {
  PlanRequest r = request("llama3.1-405b", "dgx-h100", 8, 8192, 8);
  const PlanResult res = search_plans(r);
  CHECK_FALSE(res.best.has_value());
  // 405B parameters in FSDP2's 16 bytes each (fp32 master, fp32 grads, Adam m and v) over 8 GPUs is
  // 810 GB per GPU before any activation (ZeRO paper, 16P/N): far above 80 GiB.
  const double state_floor_bytes = 405e9 * 16 / 8;
  INFO("least needed " << res.least_memory_needed_bytes << " floor " << state_floor_bytes);
  CHECK(res.least_memory_needed_bytes > 0.95 * state_floor_bytes);
  CHECK(res.least_memory_needed_bytes > res.memory_limit_bytes);
  REQUIRE_FALSE(res.suggestions.empty());
  CHECK(res.suggestions.front().find("more GPUs") != std::string::npos);
}

TEST_CASE("plans round-trip through JSON, validate, and the search is deterministic") {
  PlanRequest r = request("llama3.1-8b", "dgx-h100", 8, 4096, 16);
  const PlanResult a = search_plans(r);
  const PlanResult b = search_plans(r);
  REQUIRE(a.best.has_value());
  const nlohmann::json ja = plan_to_json(a.best->plan);
  CHECK(ja.dump() == plan_to_json(b.best->plan).dump());
  CHECK(plan_to_json(parse_plan(ja, "plan.json")).dump() == ja.dump());
  CHECK_NOTHROW(validate_plan(a.best->plan, "best"));
  for (const auto& c : a.top) CHECK_NOTHROW(validate_plan(c.plan, c.label));
  CHECK(a.best->plan.predicted.has_value());
  CHECK_FALSE(a.best->plan.notes.empty());
  CHECK(a.counts.simulated > 0);
  CHECK(a.counts.considered >= a.counts.simulated + a.counts.pruned_memory);
  for (const auto& c : a.top) CHECK_FALSE(c.lost_because.empty());
}

TEST_CASE("the Pareto frontier holds exactly the non-dominated fitting plans") {
  PlanRequest r = request("llama3.1-8b", "dgx-h100", 8, 4096, 16);
  r.top_k = 1000;
  const PlanResult res = search_plans(r);
  REQUIRE(res.best.has_value());
  std::vector<Candidate> all = res.top;
  all.push_back(*res.best);
  REQUIRE_FALSE(res.pareto.empty());
  for (const auto& p : res.pareto) {
    CHECK(p.fits);
    for (const auto& c : all) {
      if (!c.fits) continue;
      const bool dominates = c.metrics.tokens_per_s_per_gpu >= p.metrics.tokens_per_s_per_gpu &&
                             c.metrics.peak_memory_bytes <= p.metrics.peak_memory_bytes &&
                             (c.metrics.tokens_per_s_per_gpu > p.metrics.tokens_per_s_per_gpu ||
                              c.metrics.peak_memory_bytes < p.metrics.peak_memory_bytes);
      CHECK_FALSE(dominates);
    }
  }
  // The throughput-best plan is the frontier's fastest point.
  CHECK(res.pareto.back().metrics.tokens_per_s_per_gpu == doctest::Approx(res.best->metrics.tokens_per_s_per_gpu));
}

TEST_CASE("the three wrapping policies all appear among the simulated alternatives") {
  PlanRequest r = request("llama3.1-8b", "dgx-h100", 8, 4096, 16);
  r.top_k = 1000;
  const PlanResult res = search_plans(r);
  REQUIRE(res.best.has_value());
  bool seen[3] = {false, false, false};
  seen[int(res.best->wrapping)] = true;
  for (const auto& c : res.top) seen[int(c.wrapping)] = true;
  CHECK(seen[int(WrapPolicy::per_block)]);
  CHECK(seen[int(WrapPolicy::fsdp1_size_based)]);
  CHECK(seen[int(WrapPolicy::simplefsdp_auto)]);
}

}  // namespace fsdpx
