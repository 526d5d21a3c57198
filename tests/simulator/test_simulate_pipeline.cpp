// tests/simulator/test_simulate_pipeline.cpp — the simulator on pipelined plans: a golden timeline of a
// small 1F1B plan whose trace shows, per stage, pp − stage − 1 warm-up forwards, the steady 1F1B pairs
// and the cool-down backwards (and the fill and drain bubbles in time); per-stage activation peaks that
// follow from the schedule (GPipe all micro-batches, 1F1B pp − stage, interleaved and ZB-H1 as a walk
// of their pass order finds); bubbles ordered as the schedules' analyses say; point-to-point traffic
// on the NICs or NVLink as the mesh places the pipeline axis; expanded ranks equal to symmetry.
// Regenerate the golden trace with FSDPX_UPDATE_GOLDEN=1 after checking the diff by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "program/pipeline_schedule.h"
#include "program/segment_work.h"
#include "simulator/simulate.h"
#include "simulator/trace.h"

namespace fsdpx {
namespace {

// llama-tiny with `layers` blocks on pp x dp_shard CPU rank threads, embedding and head counted as no
// blocks (Megatron's even split), `global_batch` sequences of 64 tokens.
Plan tiny(int layers, int pp, PipelineSchedule schedule, std::int64_t global_batch, int vpp = 1) {
  ModelSpec m = load_model("llama-tiny");
  m.layers = layers;
  ClusterSpec c = load_cluster("cpu");
  c.gpus_per_node = pp;
  Parallelism par;
  par.pp = pp;
  par.vpp = vpp;
  par.dp_shard = 1;
  par.pp_schedule = schedule;
  Plan p = default_plan(m, c, TrainingSettings{64, 1, global_batch, 0}, par, 1, RecomputeMode::none, {0, 0});
  validate_plan(p, "tiny");
  return p;
}

std::string trace_of(const Simulation& s) {
  std::ostringstream out;
  write_chrome_trace(s.program, s.engine, out);
  return out.str();
}

// Per stage (trace process), its compute passes in time order as "F<mb>" / "B<mb>" (consecutive ops of
// one pass and micro-batch collapsed), split into warm-up (forwards before the first steady forward) |
// steady (forward, backward pairs up to the last forward's backward) | cool-down.
std::map<std::string, std::string> phases_from_trace(const std::string& trace) {
  const nlohmann::json j = nlohmann::json::parse(trace);
  std::map<int, std::string> process;
  std::map<int, std::vector<std::pair<double, std::string>>> passes;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") process[e.at("pid")] = e.at("args").at("name");
    if (e.at("ph") != "X" || e.at("tid") != 0) continue;
    const std::string kind = e.at("args").at("kind");
    if (kind != "forward" && kind != "backward") continue;
    std::string token(1, kind == "forward" ? 'F' : 'B');  // not "F" + to_string(): g++ 12's -Wrestrict false alarm
    token += std::to_string(int(e.at("args").at("micro_batch")));
    auto& list = passes[e.at("pid")];
    const double ts = e.at("ts").get<double>();
    if (list.empty() || list.back().second != token) list.emplace_back(ts, token);
  }
  std::map<std::string, std::string> out;
  for (auto& [pid, list] : passes) {
    std::sort(list.begin(), list.end());
    std::size_t first_b = 0, last_f = 0;
    while (first_b < list.size() && list[first_b].second[0] == 'F') ++first_b;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].second[0] == 'F') last_f = i;
    std::string text = "warm-up";
    for (std::size_t i = 0; i <= list.size(); ++i) {
      if (i + 1 == first_b) text += " | steady";  // the forward just before the first backward starts 1F1B
      if (i == last_f + 2) text += " | cool-down";  // after the backward paired with the last forward
      if (i < list.size()) text += " " + list[i].second;
    }
    out[process[pid]] = text;
  }
  return out;
}

TEST_CASE("golden timeline: 1F1B over 3 stages shows warm-up, steady state and cool-down per stage") {
  const Plan plan = tiny(6, 3, PipelineSchedule::one_f_one_b, 4);
  const Simulation s = simulate(plan);
  const std::string trace = trace_of(s);
  const auto phases = phases_from_trace(trace);
  CHECK(phases.at("stage 0 rank 0") == "warm-up F0 F1 | steady F2 B0 F3 B1 | cool-down B2 B3");
  CHECK(phases.at("stage 1 rank 0") == "warm-up F0 | steady F1 B0 F2 B1 F3 B2 | cool-down B3");
  CHECK(phases.at("stage 2 rank 0") == "warm-up | steady F0 B0 F1 B1 F2 B2 F3 B3 | cool-down");
  // The bubble in time: stage s starts only after stage s-1's first forward; the last stage finishes its
  // backwards first and waits for the others at the cross-stage gradient-norm all-reduce.
  std::vector<TimeNs> first_forward(3, -1), last_backward(3, 0);
  for (const OpTiming& t : s.engine.ops) {
    const Op& op = s.program.roles[std::size_t(t.role)].ops[std::size_t(t.op)];
    if (op.kind == OpKind::forward && first_forward[std::size_t(t.role)] < 0) first_forward[std::size_t(t.role)] = t.start_ns;
    if (op.kind == OpKind::backward) last_backward[std::size_t(t.role)] = std::max(last_backward[std::size_t(t.role)], t.end_ns);
  }
  CHECK(first_forward[0] < first_forward[1]);
  CHECK(first_forward[1] < first_forward[2]);
  CHECK(last_backward[2] < last_backward[1]);
  CHECK(last_backward[1] < last_backward[0]);
  CHECK(s.bubble_fraction > 0);
  const std::string path = std::string(FSDPX_TEST_DATA_DIR) + "/../golden/plan_llama_tiny_pp3_1f1b.trace.json";
  if (std::getenv("FSDPX_UPDATE_GOLDEN")) std::ofstream(path, std::ios::binary) << trace;
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (FSDPX_UPDATE_GOLDEN=1 writes it)");
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK_MESSAGE(golden.str() == trace, "trace differs from " << path);
}

// Most live activation bytes of each stage over the step (memory samples of the engine).
std::vector<double> activation_peaks(const Simulation& s) {
  std::vector<double> peak(s.program.roles.size(), 0);
  for (const MemorySample& m : s.engine.memory_samples)
    peak[std::size_t(m.role)] =
        std::max(peak[std::size_t(m.role)], m.by_category[std::size_t(MemCategory::activations)]);
  return peak;
}

// The same peak from the plan alone: walk rank r's passes, adding a chunk's saved activations at its
// forward and removing them at its backward (ZB: B swaps them for what W needs, W frees that).
double walked_peak(const Plan& plan, int rank) {
  const auto& par = plan.parallelism;
  const std::vector<Segment> segs = plan_segments(plan);
  double live = 0, peak = 0;
  for (const PipeAction& a : pipeline_actions(par.pp_schedule, par.pp, par.vpp, rank, int(plan.grad_accum()))) {
    std::vector<Segment> chunk;  // in the order the pass visits them
    for (const Segment& seg : segs)
      if (plan.units[std::size_t(seg.unit)].stage == chunk_stage(a.chunk, rank, par.pp)) chunk.push_back(seg);
    if (a.pass != PipePass::forward) std::reverse(chunk.begin(), chunk.end());
    for (const Segment& seg : chunk) {
      const SegmentMemory mem = segment_memory(plan, seg.first_module, seg.module_count);
      switch (a.pass) {
        case PipePass::forward: live += mem.saved_activation_bytes; break;
        case PipePass::backward: live -= mem.saved_activation_bytes; break;
        case PipePass::backward_input: live += mem.weight_pass_bytes - mem.saved_activation_bytes; break;
        case PipePass::backward_weight: live -= mem.weight_pass_bytes; break;
      }
      peak = std::max(peak, live + (a.pass == PipePass::backward_input ? mem.saved_activation_bytes : 0));
    }
  }
  return peak;
}

TEST_CASE("per-stage activation peaks follow from the micro-batches each schedule keeps in flight") {
  const int pp = 4, m = 8;
  const Plan gpipe = tiny(8, pp, PipelineSchedule::gpipe, m);
  const Plan one_f = tiny(8, pp, PipelineSchedule::one_f_one_b, m);
  const auto g = activation_peaks(simulate(gpipe));
  const auto f = activation_peaks(simulate(one_f));
  for (int r = 0; r < pp; ++r) {
    INFO("stage " << r);
    // Activations of one micro-batch on this stage: GPipe keeps all m, 1F1B pp - stage.
    const double per_mb = g[std::size_t(r)] / m;
    CHECK(f[std::size_t(r)] == doctest::Approx(per_mb * (pp - r)));
    CHECK(walked_peak(one_f, r) == doctest::Approx(f[std::size_t(r)]));
    CHECK(walked_peak(gpipe, r) == doctest::Approx(g[std::size_t(r)]));
  }
  for (const Plan& plan : {tiny(8, 2, PipelineSchedule::interleaved_1f1b, m, 2), tiny(8, pp, PipelineSchedule::zero_bubble, m)}) {
    INFO(pipeline_schedule_name(plan.parallelism.pp_schedule));
    const auto peaks = activation_peaks(simulate(plan));
    for (int r = 0; r < plan.parallelism.pp; ++r) CHECK(walked_peak(plan, r) == doctest::Approx(peaks[std::size_t(r)]));
  }
}

TEST_CASE("fewer micro-batches than stages run to the end under every schedule") {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::zero_bubble}) {
    INFO(pipeline_schedule_name(s));
    const Simulation sim = simulate(tiny(8, 4, s, 2));
    CHECK(sim.step_time_s > 0);
    CHECK(sim.bubble_fraction > 0.5);  // (p - 1) / (m + p - 1) = 3/5 with equal stages
  }
}

TEST_CASE("bubbles: GPipe and 1F1B share one, interleaving and ZB-H1 shrink it") {
  EngineOptions no_comm;
  no_comm.infinite_bandwidth = true;
  const int pp = 4, m = 8;
  const double g = simulate(tiny(16, pp, PipelineSchedule::gpipe, m), no_comm).bubble_fraction;
  const double f = simulate(tiny(16, pp, PipelineSchedule::one_f_one_b, m), no_comm).bubble_fraction;
  const double i = simulate(tiny(16, pp, PipelineSchedule::interleaved_1f1b, m, 2), no_comm).bubble_fraction;
  const double z = simulate(tiny(16, pp, PipelineSchedule::zero_bubble, m), no_comm).bubble_fraction;
  // Narayanan et al. 2021 §2.2: (p - 1) / (m + p - 1) of the step for both, with equal stages.
  const double ideal = double(pp - 1) / (m + pp - 1);
  CHECK(g == doctest::Approx(f).epsilon(0.05));
  CHECK(f == doctest::Approx(ideal).epsilon(0.25));
  CHECK(i < 0.8 * f);  // §2.2.1: the bubble shrinks by vpp (2) when communication is free
  CHECK(z < 0.8 * f);  // Qi et al.: W passes fill the cool-down
}

TEST_CASE("pipeline sends use the NICs when stages lie on different nodes, NVLink inside one") {
  auto send_inter_node = [](int pp, int tp) {
    ClusterSpec c = load_cluster("dgx-h100");
    c.nodes = pp * tp / 8;
    Parallelism par;
    par.pp = pp;
    par.tp = tp;
    par.dp_shard = 1;
    par.pp_schedule = PipelineSchedule::one_f_one_b;
    Plan p = default_plan(load_model("llama3.1-8b"), c, TrainingSettings{4096, 1, 8, 0}, par, 1, RecomputeMode::full);
    validate_plan(p, "fabric");
    const Simulation s = simulate(p);
    for (const Op& op : s.program.roles[0].ops)
      if (op.kind == OpKind::send) return op.nic_load > 0;
    FAIL("no send");
    return false;
  };
  CHECK(send_inter_node(2, 8));        // a stage fills a node: neighbours are on other nodes
  CHECK_FALSE(send_inter_node(8, 1));  // eight one-GPU stages on one node
}

TEST_CASE("a pipelined plan simulated rank by rank equals the symmetric run") {
  Plan plan = tiny(8, 2, PipelineSchedule::one_f_one_b, 8);
  plan.cluster.gpus_per_node = 4;
  plan.parallelism.dp_shard = 2;
  plan = default_plan(plan.model, plan.cluster, plan.training, plan.parallelism, 1, RecomputeMode::none, {0, 0});
  validate_plan(plan, "expanded");
  EngineOptions expanded;
  expanded.expand_ranks = true;
  const Simulation a = simulate(plan), b = simulate(plan, expanded);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.peak_memory_total_bytes == b.peak_memory_total_bytes);
}

}  // namespace
}  // namespace fsdpx
