// tools/cmd_demo.cpp — `fsdpx demo`: the main job on the embedded default, Llama-3.1-8B on one 8xH100
// node (FSDP 8, seq 8192, micro-batch 1, 2 micro-batches per step, selective recompute): the analytic
// estimate, then the simulated step of the default plan. Later issues put the planner in front.
#include <cstdio>
#include <memory>

#include "core/config_paths.h"
#include "cost_models/estimate.h"
#include "simulator/simulate.h"
#include "tools/cli_options.h"
#include "tools/commands.h"
#include "tools/estimate_report.h"
#include "tools/simulation_report.h"

namespace fsdpx {

namespace {

Plan demo_plan() {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 1;
  TrainingSettings t;
  t.seq = 8192;
  t.micro_batch = 1;
  t.global_batch = 16;
  Parallelism par;
  par.dp_shard = 8;
  Plan plan = default_plan(load_model("llama3.1-8b"), c, t, par, 1, RecomputeMode::selective);
  validate_plan(plan, "embedded default plan");
  return plan;
}

void run_demo(OutputFormat format) {
  const Plan plan = demo_plan();
  TrainingShape s;
  s.dp_shard = plan.parallelism.dp_shard;
  s.micro_batch = plan.training.micro_batch;
  s.seq = plan.training.seq;
  s.grad_accum = plan.grad_accum();
  s.recompute = Recompute::selective;
  s.precision = {plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const Estimate e = estimate(plan.model, plan.cluster, s);
  const Simulation sim = simulate(plan);
  if (format == OutputFormat::json) {
    nlohmann::json j;
    j["estimate"] = estimate_json(e, plan.model, plan.cluster, s);
    j["simulation"] = simulation_json(plan, sim);
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s\n", estimate_text(e, plan.model, plan.cluster, s).c_str());
  std::printf("%s", simulation_text(plan, sim).c_str());
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::text);
  CLI::App* sub = app.add_subcommand("demo", "The main job on the embedded default: Llama-3.1-8B on one 8xH100 node");
  add_enum_option(sub, "--format", *format, kOutputFormats, "text or json");
  sub->callback([format] { run_demo(*format); });
}

}  // namespace fsdpx
