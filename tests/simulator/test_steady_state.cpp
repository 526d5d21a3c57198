// tests/simulator/test_steady_state.cpp — the extrapolated step (simulator/steady_state.h) against the
// full simulation of every micro-batch: equal step time to the nanosecond, equal compute busy time and
// peak memory, on plans that cover prefetch depths, reshard modes, HSDP, gradient reduction once per step
// (no_sync), recompute and a communication-bound case; and extrapolation is actually used.
#include <doctest/doctest.h>

#include <cmath>

#include "core/config_paths.h"
#include "program/lower.h"
#include "simulator/periodic_probe.h"
#include "simulator/simulate.h"
#include "simulator/steady_state.h"

namespace fsdpx {

namespace {

Plan plan_of(const char* model, const char* cluster, int nodes, Parallelism par, std::int64_t seq, std::int64_t mb,
             std::int64_t accum, RecomputeMode rc) {
  ClusterSpec c = load_cluster(cluster);
  if (nodes == 0) c.gpus_per_node = par.world_size();
  else c.nodes = nodes;
  TrainingSettings t;
  t.seq = seq;
  t.micro_batch = mb;
  t.global_batch = mb * par.data_parallel_ranks() * accum;
  return default_plan(load_model(model), c, t, par, 1, rc);
}

Parallelism fsdp(int shard) {
  Parallelism p;
  p.dp_shard = shard;
  return p;
}

Parallelism hsdp(int rep, int shard, int tp) {
  Parallelism p;
  p.dp_replicate = rep, p.dp_shard = shard, p.tp = tp, p.sequence_parallel = tp > 1;
  p.data_parallel = DataParallel::hsdp;
  return p;
}

}  // namespace

TEST_CASE("the extrapolated step equals the full simulation") {
  std::vector<Plan> plans;
  plans.push_back(plan_of("llama-tiny", "cpu", 0, fsdp(4), 64, 1, 9, RecomputeMode::none));
  plans.push_back(plan_of("llama3.1-8b", "dgx-h100", 1, fsdp(8), 4096, 1, 12, RecomputeMode::none));
  plans.push_back(plan_of("llama3.1-8b", "dgx-h100", 1, fsdp(8), 8192, 2, 7, RecomputeMode::full));
  plans.push_back(plan_of("llama3.1-8b", "dgx-h100", 2, hsdp(2, 4, 2), 4096, 1, 10, RecomputeMode::selective_op));
  plans.push_back(plan_of("llama3.2-1b", "dgx-h100", 4, fsdp(32), 2048, 1, 16, RecomputeMode::none));
  Plan prefetch2 = plans[1];
  prefetch2.prefetch.forward = prefetch2.prefetch.backward = 2;
  prefetch2.prefetch.max_all_gathers_in_flight = 4;
  plans.push_back(prefetch2);
  Plan no_reshard = plans[1];
  for (auto& u : no_reshard.units) u.reshard_after_forward = 0;
  plans.push_back(no_reshard);
  Plan no_sync = plans[1];
  no_sync.reduce_grads = ReduceGrads::last_micro_batch;
  plans.push_back(no_sync);
  Plan bf16 = plans[3];
  bf16.precision.reduce = DType::bf16;
  plans.push_back(bf16);
  int extrapolated = 0;
  for (const Plan& p : plans) {
    EngineOptions o;
    o.record_ops = false;
    const Simulation full = simulate(p, o);
    const StepTotals t = simulate_step_totals(p);
    INFO(p.model.name << " dp " << p.parallelism.dp_replicate << "x" << p.parallelism.dp_shard << " tp "
                      << p.parallelism.tp << " accum " << p.grad_accum() << ": probe " << t.simulated_micro_batches
                      << ", step " << t.step_time_s << " vs " << full.step_time_s);
    CHECK(t.micro_batches == p.grad_accum());
    CHECK(std::llround(t.step_time_s * 1e9) == full.engine.step_time_ns);
    CHECK(t.tokens_per_s_per_gpu == doctest::Approx(full.tokens_per_s_per_gpu).epsilon(1e-12));
    CHECK(t.mfu == doctest::Approx(full.mfu).epsilon(1e-12));
    CHECK(std::llround(t.compute_busy_s * 1e9) == full.engine.compute_busy_ns.front());
    CHECK(t.peak_memory_total_bytes == doctest::Approx(full.peak_memory_total_bytes).epsilon(1e-12));
    for (int c = 0; c < kMemCategoryCount; ++c)
      CHECK(t.peak_memory_bytes[std::size_t(c)] == doctest::Approx(full.peak_memory_bytes[std::size_t(c)]).epsilon(1e-12));
    CHECK(t.compute_floor_s <= t.compute_busy_s * (1 + 1e-12));
    extrapolated += t.simulated_micro_batches < t.micro_batches;
  }
  CHECK(extrapolated >= 6);
}

TEST_CASE("a step with few micro-batches is simulated whole") {
  const Plan p = plan_of("llama-tiny", "cpu", 0, fsdp(4), 64, 2, 3, RecomputeMode::none);
  const StepTotals t = simulate_step_totals(p);
  CHECK(t.simulated_micro_batches == 3);
  CHECK(t.micro_batches == 3);
}

// Issue 36 (flat12): a flat plan's window is found in its first probe, so its simulation costs one lowering
// at any micro-batch count, and the step is still the whole simulation's to the ns, its peak to the byte.
// Under FSDP2 (torchtitan) the first micro-batch allocates the sharded gradients and its last
// reduce-scatters run while the second computes: the first probe is 6 micro-batches (with 5, these plans
// ran two lowerings: the probes of 5 and 10, or of 5 and the whole step). The fsdpx stack holds its
// gradients from the start: its first probe stays 5 (it found its window there before too).
TEST_CASE("a flat plan's window is found in its first probe at any micro-batch count") {
  Parallelism fsdp_tp;
  fsdp_tp.dp_shard = 256, fsdp_tp.tp = 2, fsdp_tp.sequence_parallel = true;
  for (const std::int64_t accum : {6, 7, 16, 100}) {
    std::vector<Plan> plans{plan_of("llama3.1-70b", "dgx-h100", 64, fsdp_tp, 8192, 1, accum, RecomputeMode::selective_op),
                            plan_of("llama3.1-8b", "dgx-h100", 1, fsdp(8), 4096, 1, accum, RecomputeMode::none)};
    for (std::size_t i = 0; i < 2; ++i) {  // as `fsdpx plan --target torchtitan@0.2.2` sets them
      plans.push_back(plans[i]);
      plans[i].framework = Framework::torchtitan, plans[i].framework_version = "0.2.2";
      plans[i].precision.reduce = DType::fp32;
    }
    for (const Plan& p : plans) {
      const bool fsdp2 = p.framework == Framework::torchtitan;
      EngineOptions o;
      o.record_ops = false;
      const Simulation full = simulate(p, o);
      const std::int64_t before = lower_call_count();
      const StepTotals t = simulate_step_totals(p);
      const std::int64_t lowerings = lower_call_count() - before;
      INFO(p.model.name << (fsdp2 ? " FSDP2" : " fsdpx") << " accum " << accum << ": probe "
                        << t.simulated_micro_batches << ", " << lowerings << " lowerings, step " << t.step_time_s
                        << " vs " << full.step_time_s);
      CHECK(lowerings == 1);
      CHECK(t.simulated_micro_batches == (fsdp2 ? 6 : 5));
      CHECK(std::llround(t.step_time_s * 1e9) == full.engine.step_time_ns);
      CHECK(std::llround(t.compute_busy_s * 1e9) == full.engine.compute_busy_ns.front());
      CHECK(std::llround(t.peak_memory_total_bytes) == std::llround(full.peak_memory_total_bytes));
      for (int c = 0; c < kMemCategoryCount; ++c)
        CHECK(std::llround(t.peak_memory_bytes[std::size_t(c)]) == std::llround(full.peak_memory_bytes[std::size_t(c)]));
      CHECK(t.mfu == doctest::Approx(full.mfu).epsilon(1e-12));
    }
  }
}

// Issue 36 (speed18): a flat probe's per-op records are dropped before its summary (steady_state.cpp
// drop_unread_records), where its program has no rendezvous op. The records give only the per-phase split
// (not in the totals) and each stage's bubble, which only a wait on a rendezvous op counts: a flat program
// has none (a pipelined one has its sends, receives and cross-stage all-reduces), so the totals' stages and
// bubble are the probe's summarised with its records, and the whole step's. Plans with tied embeddings,
// gradient clipping and fp16 loss scaling (the ops that meet across stages under pp > 1), and a 70B plan.
TEST_CASE("a flat probe's totals read nothing of its dropped records") {
  Parallelism fsdp_tp;
  fsdp_tp.dp_shard = 256, fsdp_tp.tp = 2, fsdp_tp.sequence_parallel = true;
  std::vector<Plan> plans{plan_of("llama3.2-1b", "dgx-h100", 1, fsdp(8), 2048, 1, 12, RecomputeMode::none),
                          plan_of("llama3.1-70b", "dgx-h100", 64, fsdp_tp, 8192, 1, 16, RecomputeMode::selective_op)};
  Plan fp16 = plans[0];
  fp16.precision.param = DType::fp16;
  fp16.loss_scale = LossScaleSettings{};
  plans.push_back(fp16);
  Parallelism pipelined = fsdp(4);
  pipelined.pp = 2, pipelined.pp_schedule = PipelineSchedule::one_f_one_b;
  const Plan pp2 = plan_of("llama3.2-1b", "dgx-h100", 1, pipelined, 2048, 1, 12, RecomputeMode::none);
  validate_plan(pp2, "pp 2 test plan");
  CHECK(!lower(pp2).rendezvous.empty());  // what the rule tells apart: tied, norm, sends and receives
  for (const Plan& p : plans) {
    validate_plan(p, "flat test plan");
    INFO(p.model.name << " tp " << p.parallelism.tp << " " << dtype_name(p.precision.param));
    CHECK(p.optimizer.grad_clip_norm > 0);
    const std::optional<PeriodicProbe> pr = flat_periodic_probe(p, {});
    REQUIRE(pr.has_value());
    CHECK(pr->program.rendezvous.empty());
    const Simulation with_records = summarise(pr->program, pr->engine);
    REQUIRE(!with_records.engine.ops.empty());
    const Simulation whole = simulate(p);
    const StepTotals t = simulate_step_totals(p);
    CHECK(t.simulated_micro_batches == pr->probe_micro_batches);
    CHECK(t.simulated_micro_batches < t.micro_batches);
    CHECK(t.bubble_fraction == with_records.bubble_fraction);
    CHECK(t.bubble_fraction == whole.bubble_fraction);
    REQUIRE(t.stages.size() == with_records.stages.size());
    REQUIRE(t.stages.size() == whole.stages.size());
    for (std::size_t r = 0; r < t.stages.size(); ++r) {
      CHECK(t.stages[r].bubble_s == with_records.stages[r].bubble_s);
      CHECK(t.stages[r].bubble_s == whole.stages[r].bubble_s);
      CHECK(t.stages[r].peak_memory_bytes == with_records.stages[r].peak_memory_bytes);
      CHECK(std::llround(t.stages[r].compute_s * 1e9) == whole.engine.compute_busy_ns[r]);
    }
    CHECK(std::llround(t.step_time_s * 1e9) == whole.engine.step_time_ns);
    CHECK(t.mfu == doctest::Approx(whole.mfu).epsilon(1e-12));
    CHECK(t.peak_memory_total_bytes == with_records.peak_memory_total_bytes);
    CHECK(std::llround(t.peak_memory_total_bytes) == std::llround(whole.peak_memory_total_bytes));
  }
}

}  // namespace fsdpx
