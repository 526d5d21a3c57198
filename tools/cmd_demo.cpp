// tools/cmd_demo.cpp — `fsdpx demo`: the main job on the embedded default, Llama-3.1-8B on one 8xH100
// node of torchtitan's benchmark hosts (grand-teton-h100) at sequence 8192 and a global batch of 32
// sequences, planned as torchtitan would run it in eager mode: print the chosen plan with its memory
// breakdown and the top alternatives, the analytic bound of the chosen shape (a sanity check), then the
// simulated step per phase. The full estimate and simulate reports are `fsdpx estimate` and `simulate`.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "cost_models/estimate.h"
#include "planner/planner.h"
#include "simulator/simulate.h"
#include "tools/cli_names.h"
#include "tools/cmd_demo.h"
#include "tools/estimate_report.h"
#include "tools/main_output.h"
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

}  // namespace

void run_demo(OutputFormat format, const std::string& out) {
  const PlanRequest request = demo_request();
  const PlanResult result = search_plans(request);
  if (!result.best) throw NoPlanFits(no_fit_message(result, request, request.model.name, request.cluster.name));
  const Plan& plan = result.best->plan;
  const TrainingShape shape = training_shape_of(plan);
  const Estimate e = estimate(plan.model, plan.cluster, shape);
  const Simulation sim = simulate(plan);
  if (format == OutputFormat::json) {
    nlohmann::json j;
    j["plan_search"] = plan_search_json(result);
    j["estimate"] = estimate_json(e, plan.model, plan.cluster, shape);
    j["simulation"] = simulation_json(plan, sim);
    emit_main_output(out, j.dump(2) + "\n");
    return;
  }
  emit_main_output(out, fmt::format("== 1. Plan: {} on {}, seq {}, global batch {} ==\n{}\n"
                                    "== 2. Analytic bound of the chosen shape (recompute {}) ==\n{}\n"
                                    "== 3. Simulated step of the chosen plan ==\n{}",
                                    request.model.name, request.cluster.name, request.seq, request.global_batch,
                                    plan_search_text(result, 5), recompute_name(shape.recompute),
                                    estimate_bound_text(e, plan.cluster), simulation_brief_text(plan, sim)));
}

}  // namespace fsdpx
