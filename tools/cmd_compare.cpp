// tools/cmd_compare.cpp — `fsdpx compare --plan P --profile M [-o FILE.html] [--top N] [--format text|json]`:
// simulates the plan as `fsdpx simulate` does and lays the prediction beside a measured run of it (M: the
// trace of `fsdpx run --trace` or the profile of `fsdpx run --profile`), per op, per phase and per step,
// largest misses first (simulator/op_comparison.h). `fsdpx compare --trace DIR` without a plan summarises a
// user's own PyTorch profiler traces (tools/trace_summary.h). Leaves out calibrating: `fsdpx calibrate`.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "kineto/step_breakdown.h"
#include "core/output_file.h"
#include "simulator/op_comparison.h"
#include "tools/cli_names.h"
#include "tools/cmd_compare.h"
#include "tools/format.h"
#include "tools/measured_trace.h"
#include "tools/report/compare_html.h"
#include "tools/predicted_kineto_trace.h"
#include "tools/trace_comparison.h"
#include "tools/trace_summary.h"

namespace fsdpx {

namespace {

std::string percent(double error) { return fmt::format("{:+.1f}%", 100 * error); }
double step_error(const Comparison& c) { return c.measured_step_s > 0 ? c.predicted_step_s / c.measured_step_s - 1 : 0; }

std::string measured_words(const OpMeasurement& m) {
  return fmt::format("{} step{} on {} rank{} ({})", m.steps, m.steps == 1 ? "" : "s", m.ranks, m.ranks == 1 ? "" : "s",
                     m.file);
}

std::string text(const Comparison& c, const OpMeasurement& m, const std::string& title, int top, bool stages) {
  std::string s = fmt::format("{}\nmeasured: {}\nstep time: predicted {}, measured {}, error {}\n", title,
                              measured_words(m), seconds(c.predicted_step_s), seconds(c.measured_step_s),
                              percent(step_error(c)));
  std::vector<std::vector<std::string>> phases{{"phase", "ops", "predicted", "measured", "miss", "error"}};
  for (const PhaseComparison& p : c.phases)
    phases.push_back({p.phase, fmt::format("{}", p.ops), seconds(p.predicted_s), seconds(p.measured_s),
                      seconds(std::abs(p.predicted_s - p.measured_s)), percent(p.error())});
  s += "per phase (busy time summed over its ops; overlapped communication counts in full):\n" + table(phases);
  if (c.ops.empty())  // a user's own traces: phases only (tools/trace_comparison.h)
    return s + "exposed_communication: communication while no compute runs; error = predicted / measured - 1\n";
  const std::size_t shown = top > 0 ? std::min<std::size_t>(std::size_t(top), c.ops.size()) : c.ops.size();
  std::vector<std::vector<std::string>> ops{{"op", "stage", "kind", "predicted", "measured", "miss", "error", "samples"}};
  if (!stages) ops[0].erase(ops[0].begin() + 1);
  for (std::size_t i = 0; i < shown; ++i) {
    const OpComparison& o = c.ops[i];
    std::vector<std::string> row{o.name, fmt::format("{}", o.role), op_kind_name(o.kind), seconds(o.predicted_s),
                                 seconds(o.measured_s), seconds(std::abs(o.miss_s())), percent(o.error()),
                                 fmt::format("{}", o.samples)};
    if (!stages) row.erase(row.begin() + 1);
    ops.push_back(row);
  }
  s += fmt::format("per op, largest misses first ({} of {}{}):\n", shown, c.ops.size(),
                   shown < c.ops.size() ? "; --top 0 shows all" : "");
  return s + table(ops) + "error = predicted / measured - 1; measured collectives include waiting for their peers\n";
}

nlohmann::json json_of(const Comparison& c, const OpMeasurement& m, const std::string& plan, const std::string& hash) {
  nlohmann::json phases = nlohmann::json::array(), ops = nlohmann::json::array();
  for (const PhaseComparison& p : c.phases)
    phases.push_back({{"phase", p.phase}, {"ops", p.ops}, {"predicted_s", p.predicted_s}, {"measured_s", p.measured_s},
                      {"error", p.error()}});
  for (const OpComparison& o : c.ops)
    ops.push_back({{"name", o.name}, {"stage", o.role}, {"kind", op_kind_name(o.kind)}, {"phase", op_phase_name(o.kind)},
                   {"predicted_s", o.predicted_s}, {"measured_s", o.measured_s}, {"error", o.error()},
                   {"samples", o.samples}});
  return {{"plan", plan}, {"measured", m.file}, {"program_hash", hash}, {"steps", m.steps}, {"ranks", m.ranks},
          {"step", {{"predicted_s", c.predicted_step_s}, {"measured_s", c.measured_step_s}, {"error", step_error(c)}}},
          {"phases", phases}, {"ops", ops}};
}

void run_trace_summary(const CompareOptions& o) {
  if (!o.html.empty()) throw ConfigError("-o: an HTML view needs --plan (compare against a plan)");
  std::vector<RankBreakdown> ranks;
  for (const RankTrace& t : read_kineto_traces(o.trace)) ranks.push_back(rank_breakdown(t));
  if (o.format == OutputFormat::json)
    std::printf("%s\n", trace_summary_json(o.trace, ranks).dump(2).c_str());
  else
    std::printf("%s", trace_summary_text(o.trace, ranks).c_str());
}

std::string trace_words(const TraceMeasurement& m) {
  return fmt::format("{} profiled step{} on {} rank{} ({}{})", m.steps, m.steps == 1 ? "" : "s", m.ranks,
                     m.ranks == 1 ? "" : "s", m.path, m.host ? "; CPU-only trace: host threads" : "");
}

// A plan against a user's PyTorch profiler traces: per phase and collective kind (tools/trace_comparison.h).
void run_trace_compare(const CompareOptions& o) {
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  EngineOptions eo;
  eo.record_ops = true;
  const Simulation sim = with_errors_naming(path, "plan", [&] { return simulate(plan, eo); });
  const TraceMeasurement m = measure_traces(o.trace);
  const Comparison c = compare_phases(sim, m);
  if (!o.predicted_trace.empty()) write_predicted_kineto_traces(sim, o.predicted_trace);
  const std::string title = fmt::format("{}: plan {} against the traces {}", plan.model.name, o.plan, o.trace);
  if (!o.html.empty()) write_output_file(o.html, compare_html(ComparePage{title, trace_words(m), &c, false}));
  if (o.format == OutputFormat::json) {
    nlohmann::json j = json_of(c, OpMeasurement{m.path, {}, m.mean.step_s, m.steps, m.ranks}, path, "");
    j.erase("program_hash");
    j.erase("ops");
    j["host_trace"] = m.host;
    for (nlohmann::json& p : j["phases"])
      p["measured_count_per_step"] = m.mean.phase_count.count(p["phase"]) ? m.mean.phase_count.at(p["phase"]) : 0.0;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s", text(c, OpMeasurement{m.path, {}, m.mean.step_s, m.steps, m.ranks}, title, 0, false).c_str());
}

}  // namespace

void run_compare(const CompareOptions& o) {
  if (o.profile.empty() == o.trace.empty()) throw ConfigError("--profile, --trace: give exactly one");
  if (!o.predicted_trace.empty() && (o.plan.empty() || o.trace.empty()))
    throw ConfigError("--predicted-trace: needs --plan and --trace");
  if (o.plan.empty() && !o.trace.empty()) return run_trace_summary(o);
  if (o.plan.empty()) throw ConfigError("--profile: needs --plan (the plan the run ran)");
  if (!o.trace.empty()) return run_trace_compare(o);
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  EngineOptions eo;
  eo.record_ops = true;
  const Simulation sim = with_errors_naming(path, "plan", [&] { return simulate(plan, eo); });
  const OpMeasurement m = load_measurement(o.profile, sim.program);
  const Comparison c = compare_ops(sim, m);
  const std::string title = fmt::format("{}: plan {} against its run", plan.model.name, o.plan);
  const bool stages = sim.program.roles.size() > 1;
  if (!o.html.empty())
    write_output_file(o.html, compare_html(ComparePage{title, measured_words(m), &c, stages}));
  if (o.format == OutputFormat::json)
    std::printf("%s\n", json_of(c, m, path, program_hash(sim.program)).dump(2).c_str());
  else
    std::printf("%s", text(c, m, title, o.top, stages).c_str());
}

}  // namespace fsdpx
