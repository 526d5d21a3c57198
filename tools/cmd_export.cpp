// tools/cmd_export.cpp — `fsdpx export --plan P [--target torchtitan@0.2.2] [-o job.toml]`: writes the plan
// as a torchtitan job config of the named release (planner/export_torchtitan.h) to a file or stdout. What
// the config cannot express is written as comments in the file and listed on stderr, and the closest plan
// it does express is simulated: its speed and peak memory are reported next to the plan's.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/output_file.h"
#include "planner/export_torchtitan.h"
#include "planner/target.h"
#include "simulator/steady_state.h"
#include "tools/cli_names.h"
#include "tools/cmd_export.h"

namespace fsdpx {

namespace {


void predict(Plan& p) {
  const StepTotals t = simulate_step_totals(p);
  p.predicted = PredictedMetrics{t.step_time_s, t.tokens_per_s_per_gpu, t.mfu,
                                 std::max(0.0, t.step_time_s - t.compute_busy_s), t.peak_memory_total_bytes};
}

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); }

// The closest expressible plan, simulated, against the plan's own prediction and memory budget.
void report_closest(const Plan& plan, const Plan& closest) {
  std::string budget;
  if (plan.planner) {
    const double usable = plan.planner->memory_capacity_bytes - plan.planner->memory_margin_bytes;
    budget = fmt::format("; {} the {} the plan may use", closest.predicted->peak_memory_bytes <= usable ? "within" : "OVER",
                         gib_text(usable));
  }
  std::fprintf(stderr, "fsdpx export: the config runs the closest expressible plan: %.0f tokens/s/GPU, peak %s%s\n",
               closest.predicted->tokens_per_s_per_gpu, gib_text(closest.predicted->peak_memory_bytes).c_str(),
               budget.c_str());
  if (plan.predicted)
    std::fprintf(stderr, "fsdpx export: the plan itself: %.0f tokens/s/GPU, peak %s\n",
                 plan.predicted->tokens_per_s_per_gpu, gib_text(plan.predicted->peak_memory_bytes).c_str());
}

}  // namespace

void run_export(const ExportOptions& o) {
  const Target target = o.target.empty() ? default_torchtitan_target() : parse_target(o.target, "command line: --target");
  if (target.kind != TargetKind::torchtitan)
    throw ConfigError("command line: --target: fsdpx runs plans directly (fsdpx run --plan); export writes torchtitan");
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  const std::string description = "fsdpx plan " + std::filesystem::path(path).stem().string();
  const TorchtitanSettings s = torchtitan_settings(plan, target.version);
  Plan closest;
  if (!s.notes.empty()) {
    closest = torchtitan_closest_plan(plan, s);
    predict(closest);
  }
  const std::string toml = torchtitan_toml(plan, description, target.version, s.notes.empty() ? nullptr : &closest);
  if (o.out.empty()) {
    std::fputs(toml.c_str(), stdout);
  } else {
    write_output_file(o.out, toml);
    std::printf("torchtitan %s job config written to %s\n", target.version.c_str(), o.out.c_str());
  }
  if (plan.planner && plan.planner->target != target_name(target))
    std::fprintf(stderr, "fsdpx export: the plan was made for target %s, not %s\n", plan.planner->target.c_str(),
                 target_name(target).c_str());
  for (const TorchtitanNote& n : s.notes)
    std::fprintf(stderr, "fsdpx export: not exact: %s: %s\n", n.key.c_str(), n.text.c_str());
  if (!s.notes.empty()) report_closest(plan, closest);
}

}  // namespace fsdpx
