// tests/simulator/test_simulate.cpp — the simulator on lowered plans: with overlap off the step time is
// the sum of op times; with infinite bandwidth it is the compute time; prefetch 0 serialises
// all-gathers and compute; runs are deterministic to the trace byte; 16 ranks simulated one by one
// equal the symmetric run; the peak memory of a small plan equals its hand-computed value, and its op is
// named (by a program lowered without names, labelled) with the same step; golden
// traces pin 2 small plans (regenerate with FSDPX_UPDATE_GOLDEN=1 after checking the diff).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "program/segment_work.h"
#include "simulator/simulate.h"
#include "simulator/simulate_extrapolated.h"
#include "simulator/steady_state.h"
#include "simulator/trace.h"

namespace fsdpx {
namespace {

Plan small_plan(const std::string& model, int nodes, int dp_replicate, int dp_shard, std::int64_t global_batch,
                RecomputeMode recompute = RecomputeMode::none) {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = nodes;
  TrainingSettings t;
  t.seq = 1024;
  t.micro_batch = 1;
  t.global_batch = global_batch;
  Parallelism par;
  par.dp_replicate = dp_replicate;
  par.dp_shard = dp_shard;
  if (dp_replicate > 1) par.data_parallel = DataParallel::hsdp;
  Plan p = default_plan(load_model(model), c, t, par, 1, recompute);
  validate_plan(p, "test plan");
  return p;
}

double op_sum_ns(const StepProgram& p, bool compute_only) {
  double ns = 0;
  for (const auto& op : p.roles[0].ops)
    if (!compute_only || op.stream == StreamKind::compute) ns += std::ceil(op.duration_s * 1e9 - 1e-3);
  return ns;
}

std::string trace_of(const Simulation& s) {
  std::ostringstream out;
  write_chrome_trace(s.program, s.engine, out);
  return out.str();
}

TEST_CASE("overlap off: a lowered plan's step time is the sum of its op times") {
  const Plan plan = small_plan("gpt2-124m", 1, 1, 8, 16, RecomputeMode::full);  // 2 micro-batches
  EngineOptions o;
  o.overlap = false;
  const Simulation s = simulate(plan, o);
  CHECK(double(s.engine.step_time_ns) == doctest::Approx(op_sum_ns(s.program, false)).epsilon(1e-12));
  const Simulation overlapped = simulate(plan);
  CHECK(overlapped.step_time_s < s.step_time_s);  // the other branch: overlap hides communication
}

TEST_CASE("infinite bandwidth: the step time is the compute time") {
  const Plan plan = small_plan("llama3.2-1b", 2, 1, 16, 32);
  EngineOptions o;
  o.infinite_bandwidth = true;
  const Simulation s = simulate(plan, o);
  double compute_ns = 0;
  for (const auto& op : s.program.roles[0].ops)
    if (op.stream == StreamKind::compute) compute_ns += std::ceil((op.duration_s - op.serial_comm_time_s) * 1e9 - 1e-3);
  CHECK(double(s.engine.step_time_ns) == doctest::Approx(compute_ns).epsilon(1e-12));
  CHECK(s.exposed_comm_s == doctest::Approx(0.0));
  CHECK(simulate(plan).step_time_s > s.step_time_s);  // finite bandwidth costs something here
}

// True when some all-gather runs while a compute op runs.
bool gathers_overlap_compute(const Simulation& s) {
  const auto& ops = s.program.roles[0].ops;
  for (const auto& a : s.engine.ops) {
    if (ops[std::size_t(a.op)].kind != OpKind::all_gather || a.end_ns == a.start_ns) continue;
    for (const auto& c : s.engine.ops) {
      const Op& op = ops[std::size_t(c.op)];
      if (op.stream != StreamKind::compute || c.end_ns == c.start_ns) continue;
      if (a.start_ns < c.end_ns && c.start_ns < a.end_ns) return true;
    }
  }
  return false;
}

TEST_CASE("prefetch 0 serialises all-gathers with compute; prefetch 1 overlaps them") {
  Plan plan = small_plan("llama3.2-1b", 1, 1, 8, 8);
  plan.prefetch.forward = 0;
  plan.prefetch.backward = 0;
  const Simulation serial = simulate(plan);
  CHECK_FALSE(gathers_overlap_compute(serial));
  plan.prefetch.forward = 1;
  plan.prefetch.backward = 1;
  const Simulation prefetched = simulate(plan);
  CHECK(gathers_overlap_compute(prefetched));
  CHECK(prefetched.step_time_s < serial.step_time_s);
}

TEST_CASE("determinism: the same plan gives the same trace bytes") {
  const Plan plan = small_plan("gpt2-124m", 2, 2, 8, 32);
  const std::string a = trace_of(simulate(plan));
  const std::string b = trace_of(simulate(plan));
  CHECK(a.size() > 1000);
  CHECK(a == b);
}

TEST_CASE("symmetry: 16 ranks simulated one by one equal the symmetric run") {
  Plan plan = small_plan("gpt2-124m", 2, 2, 8, 32);  // HSDP 2 x 8 over 2 nodes
  plan.units[2].reshard_after_forward = 4;           // and a partial-reshard group
  EngineOptions each;
  each.expand_ranks = true;
  const Simulation all = simulate(plan, each);
  const Simulation sym = simulate(plan);
  CHECK(all.engine.step_time_ns == sym.engine.step_time_ns);
  CHECK(all.peak_memory_total_bytes == sym.peak_memory_total_bytes);
  CHECK(all.peak_memory_op == sym.peak_memory_op);
  int ranks_seen = 0;
  for (const auto& t : all.engine.ops) ranks_seen = std::max(ranks_seen, t.rank + 1);
  CHECK(ranks_seen == 16);
}

TEST_CASE("peak memory of a small plan equals its hand-computed value") {
  // One block and a large vocabulary, so the peak is at the start of the head's backward: the resident
  // shards and overheads, every saved activation, the head unit's unsharded parameters (the last unit is
  // not resharded after forward) and its unsharded gradient buffer. Prefetch 0 keeps the next
  // all-gather from starting before that op ends.
  ModelSpec m;
  m.name = "one-block";
  m.layers = 1;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.head_dim = 64;
  m.ffn_hidden = 688;
  m.vocab = 32000;
  m.max_seq = 1024;
  ClusterSpec c = load_cluster("dgx-h100");
  TrainingSettings t;
  t.seq = 1024;
  t.global_batch = 8;
  Parallelism par;
  par.dp_shard = 8;
  Plan plan = default_plan(m, c, t, par, 1, RecomputeMode::none);
  plan.prefetch.forward = plan.prefetch.backward = 0;
  validate_plan(plan, "test plan");
  REQUIRE(plan.units.size() == 3);

  const ParamCounts pc = count_params(m);
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const double head_unit = double(pc.final_norm + pc.head);
  const OverheadBytes fixed = overhead_bytes(1, 0);  // one communicator: dp_shard
  ActivationShape a;
  a.micro_batch = 1;
  a.seq = 1024;
  a.fused_loss = true;  // the default plan's framework is fsdpx's executor: llm.c's fused classifier
  const double expected = fsdp2_state_bytes(double(pc.total()), 8, policy).total() + fixed.cuda_context +
                          fixed.nccl_buffers + embedding_activation_bytes(m, a) +
                          block_activation_bytes(m, a, Recompute::none) + final_norm_activation_bytes(m, a) +
                          logits_bytes(m, a) +
                          logits_backward_working_bytes(m, a) +
                          head_unit * dtype_bytes(policy.param) + head_unit * dtype_bytes(policy.reduce);
  const Simulation s = simulate(plan);
  CHECK(s.peak_memory_op == "bwd.s2.mb0");
  CHECK(s.engine.peak_by_role[0].total_bytes == doctest::Approx(expected).epsilon(1e-12));
  // The allocator's reserve grows on what the step allocates and frees, not on the resident state.
  const MemoryPeak& peak = s.engine.peak_by_role[0];
  const double churn = peak.by_category[std::size_t(MemCategory::activations)] +
                       peak.by_category[std::size_t(MemCategory::transient)];
  CHECK(churn == doctest::Approx(churn_bytes(peak)));
  CHECK(s.peak_memory_total_bytes == doctest::Approx(expected + 0.10 * churn));
  CHECK(s.peak_memory_total_bytes < expected + 0.10 * expected);
}

// `fsdpx simulate` (simulate_fast: a periodic probe; simulate with --full) names the op at the peak; the
// planner's totals (steady_state.h) lower without names and move no number.
TEST_CASE("op names: simulate names the peak op; a program lowered without names labels it, same step") {
  const Plan plan = small_plan("gpt2-124m", 1, 1, 8, 128);  // 16 micro-batches: the probe extrapolates
  const Simulation full = simulate(plan);
  const Simulation fast = simulate_fast(plan);
  CHECK(fast.simulated_micro_batches > 0);
  const int stage = full.peak_memory_stage;
  const int peak = full.engine.peak_by_role[std::size_t(stage)].op;
  REQUIRE(peak >= 0);
  const Op& op = full.program.roles[std::size_t(stage)].ops[std::size_t(peak)];
  const std::string& name = op.name;
  CHECK(name.rfind(op.kind == OpKind::all_gather ? "ag.u" : "bwd.s", 0) == 0);
  CHECK(full.peak_memory_op == name);
  CHECK(fast.peak_memory_op == name);
  EngineOptions bare;
  bare.op_names = false;
  const Simulation unnamed = simulate(plan, bare);
  CHECK(unnamed.engine.step_time_ns == full.engine.step_time_ns);
  CHECK(unnamed.peak_memory_total_bytes == full.peak_memory_total_bytes);
  CHECK(unnamed.engine.peak_by_role[std::size_t(stage)].op == peak);
  CHECK(unnamed.peak_memory_op == fmt::format("#{} ({})", peak, op_kind_name(op.kind)));
  const StepTotals totals = simulate_step_totals(plan);
  CHECK(std::llround(totals.step_time_s * 1e9) == full.engine.step_time_ns);
  CHECK(totals.peak_memory_total_bytes == doctest::Approx(full.peak_memory_total_bytes).epsilon(1e-12));
}

// Golden traces: the whole path (lowering, timing, engine, trace) pinned for two small plans.
void check_golden(const Simulation& s, const std::string& name) {
  const std::string trace = trace_of(s);
  const std::string path = std::string(FSDPX_TEST_DATA_DIR) + "/../golden/" + name;
  if (std::getenv("FSDPX_UPDATE_GOLDEN")) std::ofstream(path, std::ios::binary) << trace;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (FSDPX_UPDATE_GOLDEN=1 writes it)");
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK_MESSAGE(golden.str() == trace, "trace differs from " << path);
}

TEST_CASE("golden trace: llama-tiny, FSDP over 4 ranks, 2 micro-batches") {
  check_golden(simulate(load_plan(std::string(FSDPX_CONFIG_DIR_FOR_TESTS) + "/plans/llama-tiny-cpu-fsdp4.json")),
               "plan_llama_tiny_fsdp4.trace.json");
}

TEST_CASE("golden trace: gpt-tiny, HSDP 2 x 2 with full recompute") {
  ClusterSpec c = load_cluster("cpu");
  TrainingSettings t;
  t.seq = 64;
  t.global_batch = 8;
  Parallelism par;
  par.dp_replicate = 2;
  par.dp_shard = 2;
  par.data_parallel = DataParallel::hsdp;
  Plan plan = default_plan(load_model("gpt-tiny"), c, t, par, 1, RecomputeMode::full);
  validate_plan(plan, "test plan");
  check_golden(simulate(plan), "plan_gpt_tiny_hsdp2x2.trace.json");
}

}  // namespace
}  // namespace fsdpx
