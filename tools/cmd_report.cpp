// tools/cmd_report.cpp — `fsdpx report (--plan P | --model M --cluster C (--nodes N | --world-size N)
// --seq S --global-batch B) [--vary nodes=1,2,4] [--vary inter_node_gbit=100,200] [--vary seq=4096,8192]
// [--scaling weak|strong|both] [--train-tokens N] [-o out.html] [--csv out.csv] [--format text|json]`:
// what-if sweeps. With --plan every point re-simulates the plan resized to the point (planner/whatif.h);
// with --model every point is re-planned. Several --vary give their grid. Prints a table (or JSON); the
// HTML page has the charts, the CSV one row per point; rows over the memory capacity are marked.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "planner/ep_degrees.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "planner/planner.h"
#include "planner/whatif.h"
#include "tools/cli_names.h"
#include "tools/cluster_size.h"
#include "tools/cmd_report.h"
#include "tools/plan_report.h"
#include "tools/report/report_html.h"

namespace fsdpx {

namespace {

void check_mode(const ReportOptions& o) {
  const bool model_given = !o.model.empty() || !o.cluster.empty() || o.nodes || o.world_size || o.seq || o.global_batch;
  if (!o.plan.empty() && model_given)
    throw ConfigError("command line: give --plan, or --model with --cluster, --nodes/--world-size, --seq and "
                      "--global-batch; not both");
  if (o.plan.empty() && !model_given) throw ConfigError("command line: --plan or --model is required");
  if (o.plan.empty() && (o.model.empty() || o.cluster.empty() || !o.seq || !o.global_batch))
    throw ConfigError("command line: --model needs --cluster, --seq and --global-batch");
}

// --train-tokens: a count such as "2e12", "15T", "300B" or "1.5M" (k, M, B or G, T: powers of 1000).
constexpr double kMaxTrainTokens = 1e18;

double parse_train_tokens(const std::string& text) {
  const std::string suffixes = "kKMBGT";
  const double scale[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12};
  const std::size_t at = text.empty() ? std::string::npos : suffixes.find(text.back());
  const std::string digits = at == std::string::npos ? text : text.substr(0, text.size() - 1);
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (digits.empty() || used != digits.size() || !std::isfinite(v))
    throw ConfigError(fmt::format("command line: --train-tokens: expected a token count such as 2e12 or 15T, got \"{}\"", text));
  if (at != std::string::npos) v *= scale[at];
  if (!(v >= 1 && v <= kMaxTrainTokens))
    throw ConfigError(fmt::format("command line: --train-tokens: expected 1 to {:g} tokens, got {}", kMaxTrainTokens, text));
  return v;
}

std::vector<Scaling> scalings(const ReportOptions& o, const std::vector<WhatIfAxis>& axes) {
  if (o.scaling == "weak") return {Scaling::weak};
  const bool nodes = std::any_of(axes.begin(), axes.end(), [](const WhatIfAxis& a) { return a.param == WhatIfParam::nodes; });
  if (!nodes)
    throw ConfigError(fmt::format("command line: --scaling {}: needs --vary nodes=... (strong scaling keeps the global "
                                  "batch while the GPU count changes)", o.scaling));
  if (o.scaling == "strong") return {Scaling::strong};
  return {Scaling::weak, Scaling::strong};
}

// --memory-limit with --plan: the capacity the rows are judged against instead of the GPU's HBM.
void set_capacity(std::vector<WhatIfRow>& rows, const std::optional<double>& limit_gib) {
  if (!limit_gib) return;
  for (WhatIfRow& r : rows) r.memory_capacity_bytes = *limit_gib * 1024.0 * 1024.0 * 1024.0;
}

PlanRequest base_request(const ReportOptions& o) {
  PlanRequest r;
  r.model = load_model(o.model);
  r.cluster = sized_cluster(load_cluster(o.cluster), o.nodes, o.world_size);
  r.target = parse_target(o.target, "command line: --target");
  refuse_unplanned_request(r, resolve_config("models", o.model), "/");
  r.seq = *o.seq;
  r.global_batch = *o.global_batch;
  if (r.seq > r.model.max_seq)
    throw ConfigError(fmt::format("{}: max_seq: the model's context length {} is shorter than --seq {}",
                                  resolve_config("models", o.model), r.model.max_seq, r.seq));
  if (r.global_batch > kMaxGlobalBatch)
    throw ConfigError(fmt::format("command line: --global-batch: expected an integer from 1 to {}, got {}",
                                  kMaxGlobalBatch, r.global_batch));
  if (o.memory_limit_gib) r.memory_limit_bytes = *o.memory_limit_gib * 1024.0 * 1024.0 * 1024.0;
  return r;
}

// Runs the sweeps into `page` and returns the base plan; `input` becomes the file simulator errors name.
Plan run_sweeps(const ReportOptions& o, ReportPage& page, std::string& input) {
  const std::vector<WhatIfPoint> points = whatif_grid(page.axes);
  const std::vector<Scaling> modes = scalings(o, page.axes);
  Plan base;
  input = o.model;
  if (!o.plan.empty()) {
    input = resolve_config("plans", o.plan);
    base = load_plan(input);
    for (Scaling s : modes) page.sweeps.push_back({s, sweep_plan(base, points, s)});
    page.source = fmt::format("Plan {} re-simulated at every point (tp, cp, pp kept; the data-parallel degrees follow "
                              "the GPU count)", o.plan);
  } else {
    const PlanRequest request = base_request(o);
    const PlanResult result = search_plans(request);
    if (!result.best) throw NoPlanFits(no_fit_message(result, request, o.model, o.cluster));
    base = result.best->plan;
    for (Scaling s : modes) page.sweeps.push_back({s, sweep_request(request, points, s)});
    page.source = "Re-planned at every point (fsdpx plan's search; the best plan per point)";
  }
  return base;
}

}  // namespace

void run_report(const ReportOptions& o) {
  check_mode(o);
  ReportPage page;
  for (const std::string& v : o.vary) page.axes.push_back(parse_whatif_axis(v));
  if (!o.train_tokens.empty()) page.train_tokens = parse_train_tokens(o.train_tokens);
  std::string input;
  const Plan base = run_sweeps(o, page, input);
  EngineOptions eo;
  eo.record_ops = true;
  const Simulation sim = with_errors_naming(input, "plan", [&] { return simulate(base, eo); });
  page.base_plan = &base;
  page.base_sim = &sim;
  page.wrappings = compare_wrappings(base);
  if (!o.plan.empty()) {
    for (ReportSweep& s : page.sweeps) set_capacity(s.rows, o.memory_limit_gib);
    set_capacity(page.wrappings, o.memory_limit_gib);
  }
  page.title = fmt::format("{} on {} ({} GPUs)", base.model.name, base.cluster.name, base.cluster.world_size());
  const bool text = o.format == OutputFormat::text;
  if (!o.html.empty()) write_output_file(o.html, report_html(page));
  if (!o.csv.empty()) write_output_file(o.csv, report_csv(page));
  if (!text) {
    std::printf("%s\n", report_json(page).dump(2).c_str());
    return;
  }
  std::printf("%s", report_text(page).c_str());
  if (!o.html.empty()) std::printf("HTML report written to %s\n", o.html.c_str());
  if (!o.csv.empty()) std::printf("CSV written to %s\n", o.csv.c_str());
}

}  // namespace fsdpx
