// tools/cmd_calibrate.cpp — `fsdpx calibrate --profile P -o cluster.json [--plan-out plan.json]
// [--name N] [--format text|json]`: turns a `fsdpx run --profile` file into a cluster config whose GPU
// carries measured efficiencies (simulator/calibration.h), and reports the measured step time against
// the simulator's prediction before and after calibration. `fsdpx calibrate --plan P --trace DIR` does the
// same from a user's own PyTorch profiler traces of a run of P (tools/trace_comparison.h: one factor for
// compute, one for collectives). Leaves out per-kernel calibration from such traces.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "simulator/calibration.h"
#include "simulator/calibration_fabric.h"
#include "simulator/simulate.h"
#include "tools/cli_names.h"
#include "tools/cmd_calibrate.h"
#include "tools/plan_file.h"
#include "tools/format.h"
#include "tools/run_report.h"
#include "tools/trace_comparison.h"

namespace fsdpx {

namespace {

struct LoadedProfile {
  Plan plan;
  KernelProfile kernels;
  ProfileTimes ops;  // per-op wall times (op_time_s): the kernels the backend does not time one by one
  CollectiveProfile collectives;  // empty for runs without tp or cp (and profiles written before them)
  double step_time_s = 0;
};

template <typename T>
std::map<std::string, T> number_map(JsonObject& o, std::string_view key) {
  std::map<std::string, T> out;
  JsonObject m = o.object(key);
  for (const auto& [k, v] : o.raw(key).items()) {
    if (!v.is_number()) m.fail(k, "expected a number");
    out[k] = v.template get<T>();
    m.ignore(k);
  }
  return out;
}

LoadedProfile load_profile(const std::string& path) {
  const nlohmann::json j = load_json_file(path);
  JsonObject o(j, path);
  if (o.string("format") != kProfileFormat) o.fail("format", fmt::format("expected \"{}\"", kProfileFormat));
  LoadedProfile p;
  o.string("backend");
  p.kernels.steps = int(o.integer("steps"));
  p.step_time_s = o.positive_number("step_time_s");
  o.ignore("step_times_s");
  o.ignore("skipped_steps");
  o.ignore("loss_scales");
  if (o.has("op_time_s")) p.ops.time_s = number_map<double>(o, "op_time_s");
  p.kernels.time_s = number_map<double>(o, "kernel_time_s");
  p.kernels.calls = number_map<int>(o, "kernel_calls");
  p.collectives.steps = p.ops.steps = p.kernels.steps;
  if (o.has("collective_time_s")) p.collectives.time_s = number_map<double>(o, "collective_time_s");
  if (o.has("collective_calls")) p.collectives.calls = number_map<int>(o, "collective_calls");
  p.plan = parse_plan(o.raw("plan"), path);
  o.finish();
  return p;
}

void write_json(const std::string& path, const nlohmann::json& j) { write_output_file(path, j.dump(2) + "\n"); }

// Predicted, measured and calibrated time per step of each kernel or collective.
template <class Comparison>
std::string comparison_table(const char* what, const std::vector<Comparison>& entries) {
  std::vector<std::vector<std::string>> rows{{what, "calls", "predicted", "measured", "calibrated"}};
  for (const Comparison& c : entries)
    rows.push_back({c.name, fmt::format("{}", c.calls), seconds(c.predicted_s), seconds(c.measured_s),
                    seconds(c.calibrated_s)});
  return table(rows);
}

nlohmann::json collectives_json(const FabricCalibration& fab) {
  nlohmann::json out = nlohmann::json::array();
  for (const CollectiveComparison& c : fab.collectives)
    out.push_back({{"name", c.name}, {"calls", c.calls}, {"measured_calls", c.measured_calls}, {"bytes", c.bytes},
                   {"ranks", c.ranks}, {"predicted_s", c.predicted_s}, {"measured_s", c.measured_s},
                   {"calibrated_s", c.calibrated_s}});
  return out;
}

void print_text(const Calibration& cal, const FabricCalibration& fab, const ClusterSpec& calibrated) {
  std::printf("per-kernel time per step (rank 0):\n%s", comparison_table("kernel", cal.kernels).c_str());
  if (!fab.collectives.empty())
    std::printf("tensor/context-parallel collectives per step (rank 0):\n%s", comparison_table("collective", fab.collectives).c_str());
  if (fab.fitted)
    std::printf("intra-node fabric: bus bandwidth %.3g GB/s, latency %.3g us (fitted to the collectives)\n",
                calibrated.intra.bus_bw_bytes_per_s / 1e9, calibrated.intra.latency_s * 1e6);
  for (const auto& u : cal.unmatched) std::printf("not calibrated: %s\n", u.c_str());
  for (const auto& u : fab.unmatched) std::printf("not calibrated: %s\n", u.c_str());
}

double relative_error(double predicted_s, double measured_s) { return std::abs(predicted_s - measured_s) / measured_s; }

// From a user's traces: one factor for compute time and one for collective time (tools/trace_comparison.h).
void run_trace_calibrate(const CalibrateOptions& o) {
  if (o.plan.empty()) throw ConfigError("--trace: needs --plan (the plan the traced run ran)");
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  const TraceMeasurement m = measure_traces(o.trace);
  EngineOptions eo;
  eo.record_ops = true;
  const Simulation before = with_errors_naming(path, "plan", [&] { return simulate(plan, eo); });
  const TraceCalibration cal = calibrate_from_trace(plan, compare_phases(before, m));
  const std::string name = o.name.empty() ? plan.cluster.name + "-calibrated" : o.name;
  write_json(o.output, calibrated_cluster_json(cal.cluster, cal.cluster.gpu, name,
                                               fmt::format("calibrated by fsdpx calibrate from the traces {} of plan {}",
                                                           o.trace, o.plan)));
  Plan calibrated = plan;
  calibrated.cluster = cal.cluster;
  calibrated.cluster.name = name;
  calibrated.predicted.reset();
  if (!o.plan_out.empty()) write_json(o.plan_out, plan_to_json(calibrated));
  const double after_s = with_errors_naming(path, "plan", [&] { return simulate(calibrated).step_time_s; });
  const double measured_s = m.mean.step_s;
  if (o.format == OutputFormat::json) {
    std::printf("%s\n", nlohmann::json{{"cluster", o.output}, {"trace", o.trace}, {"plan", path},
                                       {"compute_factor", cal.compute_factor},
                                       {"collective_factor", cal.collective_factor}, {"notes", cal.notes},
                                       {"step_time_s", {{"measured", measured_s}, {"simulated_before", before.step_time_s},
                                                        {"simulated_after", after_s}}},
                                       {"relative_error", {{"before", relative_error(before.step_time_s, measured_s)},
                                                           {"after", relative_error(after_s, measured_s)}}}}
                               .dump(2).c_str());
    return;
  }
  std::printf("compute time x%.3g (efficiencies / %.3g), collective time x%.3g (bus bandwidth / %.3g)\n",
              cal.compute_factor, cal.compute_factor, cal.collective_factor, cal.collective_factor);
  for (const std::string& n : cal.notes) std::printf("note: %s\n", n.c_str());
  std::printf("step time: measured %s; simulated %s before (error %.0f%%), %s after calibration (error %.0f%%)\n",
              seconds(measured_s).c_str(), seconds(before.step_time_s).c_str(),
              100 * relative_error(before.step_time_s, measured_s), seconds(after_s).c_str(),
              100 * relative_error(after_s, measured_s));
  std::printf("calibrated cluster written to %s\n", o.output.c_str());
}

}  // namespace

void run_calibrate(const CalibrateOptions& o) {
  if (o.profile.empty() == o.trace.empty()) throw ConfigError("--profile, --trace: give exactly one");
  if (!o.trace.empty()) return run_trace_calibrate(o);
  const LoadedProfile p = load_profile(o.profile);
  const Calibration cal = calibrate_gpu(p.plan, p.kernels, o.profile, p.ops);
  const FabricCalibration fab = calibrate_fabric(p.plan, p.collectives, o.profile);
  const std::string name = o.name.empty() ? p.plan.cluster.name + "-calibrated" : o.name;
  const std::string note = fmt::format("{} calibrated by fsdpx calibrate from {} ({} steps)", p.plan.cluster.gpu.name,
                                       o.profile, p.kernels.steps);
  ClusterSpec cluster = p.plan.cluster;
  cluster.intra = fab.intra;
  write_json(o.output, calibrated_cluster_json(cluster, cal.gpu, name, note));
  Plan calibrated = p.plan;
  calibrated.cluster.gpu = cal.gpu;
  calibrated.cluster.intra = fab.intra;
  calibrated.cluster.name = name;
  calibrated.predicted.reset();
  if (!o.plan_out.empty()) write_plan_file(o.plan_out, calibrated);
  const double before_s = with_errors_naming(o.profile, "plan", [&] { return simulate(p.plan).step_time_s; });
  const double after_s = with_errors_naming(o.profile, "plan", [&] { return simulate(calibrated).step_time_s; });
  const double err_before = std::abs(before_s - p.step_time_s) / p.step_time_s;
  const double err_after = std::abs(after_s - p.step_time_s) / p.step_time_s;
  if (o.format == OutputFormat::json) {
    nlohmann::json k = nlohmann::json::array();
    for (const KernelComparison& c : cal.kernels)
      k.push_back({{"name", c.name}, {"calls", c.calls}, {"measured_calls", c.measured_calls},
                   {"predicted_s", c.predicted_s}, {"measured_s", c.measured_s}, {"calibrated_s", c.calibrated_s}});
    std::vector<std::string> unmatched = cal.unmatched;
    unmatched.insert(unmatched.end(), fab.unmatched.begin(), fab.unmatched.end());
    nlohmann::json out{{"cluster", o.output}, {"kernels", k}, {"collectives", collectives_json(fab)},
                       {"unmatched", unmatched},
                       {"step_time_s", {{"measured", p.step_time_s}, {"simulated_before", before_s},
                                        {"simulated_after", after_s}}},
                       {"relative_error", {{"before", err_before}, {"after", err_after}}}};
    if (fab.fitted)
      out["intra_node"] = {{"bus_bw_gb_per_s", fab.intra.bus_bw_bytes_per_s / 1e9},
                           {"latency_us", fab.intra.latency_s * 1e6}};
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  print_text(cal, fab, calibrated.cluster);
  std::printf("step time: measured %s; simulated %s before (error %.0f%%), %s after calibration (error %.0f%%)\n",
              seconds(p.step_time_s).c_str(), seconds(before_s).c_str(), 100 * err_before, seconds(after_s).c_str(),
              100 * err_after);
  std::printf("calibrated cluster written to %s%s\n", o.output.c_str(),
              o.plan_out.empty() ? "" : fmt::format("; calibrated plan to {}", o.plan_out).c_str());
}

}  // namespace fsdpx
