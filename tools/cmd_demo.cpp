// tools/cmd_demo.cpp — `fsdpx demo`: the main job on the embedded default, Llama-3.1-8B on one 8xH100
// node of torchtitan's benchmark hosts (grand-teton-h100) at sequence 8192 and a global batch of 32
// sequences, planned as torchtitan would run it in eager mode: print the chosen plan with its memory
// breakdown and the top alternatives, then simulate it and print the per-phase summary. The analytic
// estimate of the chosen shape comes first as a sanity bound.
#include <cstdio>
#include <memory>

#include "core/config_paths.h"
#include "cost_models/estimate.h"
#include "planner/planner.h"
#include "simulator/simulate.h"
#include "tools/cli_options.h"
#include "tools/commands.h"
#include "tools/estimate_report.h"
#include "tools/plan_report.h"
#include "tools/simulation_report.h"

namespace fsdpx {

namespace {

PlanRequest demo_request() {
  PlanRequest r;
  r.model = load_model("llama3.1-8b");
  r.cluster = load_cluster("grand-teton-h100");
  r.cluster.nodes = 1;
  r.seq = 8192;
  r.global_batch = 32;
  // torchtitan-like eager FSDP: what torchtitan's apply_fsdp and apply_ac run (the torchtitan target's
  // space: one fully_shard per block, AC none, op-level selective, every n-th block or full), with its
  // eager PyTorch costs, no tensor, context or pipeline parallelism.
  r.target = default_torchtitan_target();
  r.framework = Framework::torchtitan;
  r.space.allow_tp = false;
  r.space.allow_pp = false;
  return r;
}

void run_demo(OutputFormat format) {
  const PlanRequest request = demo_request();
  const PlanResult result = search_plans(request);
  if (!result.best) throw NoPlanFits(no_fit_message(result));
  const Plan& plan = result.best->plan;
  const TrainingShape shape = training_shape_of(plan);
  const Estimate e = estimate(plan.model, plan.cluster, shape);
  const Simulation sim = simulate(plan);
  if (format == OutputFormat::json) {
    nlohmann::json j;
    j["plan_search"] = plan_search_json(result);
    j["estimate"] = estimate_json(e, plan.model, plan.cluster, shape);
    j["simulation"] = simulation_json(plan, sim);
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("== 1. Plan: %s on %s, seq %lld, global batch %lld ==\n\n%s\n", request.model.name.c_str(),
              request.cluster.name.c_str(), static_cast<long long>(request.seq),
              static_cast<long long>(request.global_batch), plan_search_text(result, 5).c_str());
  std::printf("== 2. Analytic estimate of the chosen shape ==\n\n%s\n", estimate_text(e, plan.model, plan.cluster, shape).c_str());
  std::printf("== 3. Simulated step of the chosen plan ==\n\n%s", simulation_text(plan, sim).c_str());
}

}  // namespace

void setup_demo(CLI::App& app) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::text);
  CLI::App* sub = app.add_subcommand("demo", "The main job on the embedded default: plan, estimate and simulate "
                                             "Llama-3.1-8B on one 8xH100 node");
  add_enum_option(sub, "--format", *format, kOutputFormats, "text or json");
  sub->callback([format] { run_demo(*format); });
}

}  // namespace fsdpx
