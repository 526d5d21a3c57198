// tools/cmd_report.cpp — `fsdpx report (--plan P | --model M --cluster C (--nodes N | --world-size N)
// --seq S --global-batch B) [--vary nodes=1,2,4] [--vary inter_node_gbit=100,200] [--vary seq=4096,8192]
// [--html out.html] [--csv out.csv]`: what-if sweeps. With --plan every point re-simulates the plan
// resized to the point (planner/whatif.h); with --model every point is re-planned. Several --vary
// give their grid. Prints a table; the HTML page has the charts, the CSV one row per point.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "planner/planner.h"
#include "planner/whatif.h"
#include "tools/cli_options.h"
#include "tools/cluster_size.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/report/report_html.h"

namespace fsdpx {

namespace {

struct ReportOptions {
  std::string plan, model, cluster, html, csv;
  std::optional<int> nodes, world_size;
  std::optional<std::int64_t> seq, global_batch;
  std::optional<double> memory_limit_gib;
  std::vector<std::string> vary;
};

void check_mode(const ReportOptions& o) {
  const bool model_given = !o.model.empty() || !o.cluster.empty() || o.nodes || o.world_size || o.seq || o.global_batch;
  if (!o.plan.empty() && model_given)
    throw ConfigError("command line: give --plan, or --model with --cluster, --nodes/--world-size, --seq and "
                      "--global-batch; not both");
  if (o.plan.empty() && !model_given) throw ConfigError("command line: --plan or --model is required");
  if (o.plan.empty() && (o.model.empty() || o.cluster.empty() || !o.seq || !o.global_batch))
    throw ConfigError("command line: --model needs --cluster, --seq and --global-batch");
}

PlanRequest base_request(const ReportOptions& o) {
  PlanRequest r;
  r.model = load_model(o.model);
  r.cluster = sized_cluster(load_cluster(o.cluster), o.nodes, o.world_size);
  r.seq = *o.seq;
  r.global_batch = *o.global_batch;
  if (r.seq > r.model.max_seq)
    throw ConfigError(fmt::format("command line: --seq: {} exceeds the model's max_seq {}", r.seq, r.model.max_seq));
  if (r.global_batch > kMaxGlobalBatch)
    throw ConfigError(fmt::format("command line: --global-batch: expected an integer from 1 to {}, got {}",
                                  kMaxGlobalBatch, r.global_batch));
  if (o.memory_limit_gib) r.memory_limit_bytes = *o.memory_limit_gib * 1024.0 * 1024.0 * 1024.0;
  return r;
}

std::string rows_text(const std::vector<WhatIfRow>& rows, const char* first) {
  std::vector<std::vector<std::string>> t{{first, "step time", "tokens/s/GPU", "MFU", "exposed comm", "peak memory"}};
  std::string errors;
  for (const WhatIfRow& r : rows) {
    if (!r.error.empty()) {
      t.push_back({r.label, "-", "-", "-", "-", "-"});
      errors += fmt::format("  {}: {}\n", r.label, r.error);
      continue;
    }
    const PointMetrics& m = r.metrics;
    t.push_back({r.label, seconds(m.step_time_s), fmt::format("{:.0f}", m.tokens_per_s_per_gpu),
                 fmt::format("{:.1f}%", 100 * m.mfu), seconds(m.exposed_comm_s), gib(m.peak_memory_total_bytes)});
  }
  return table(t) + (errors.empty() ? "" : "not simulated:\n" + errors);
}

void run_report(const ReportOptions& o) {
  check_mode(o);
  ReportPage page;
  for (const std::string& v : o.vary) page.axes.push_back(parse_whatif_axis(v));
  const std::vector<WhatIfPoint> points = whatif_grid(page.axes);
  Plan base;
  std::string input = o.model;  // the file errors of the simulator name
  if (!o.plan.empty()) {
    input = resolve_config("plans", o.plan);
    base = load_plan(input);
    page.rows = sweep_plan(base, points);
    page.source = fmt::format("Plan {} re-simulated at every point (data-parallel degrees and global batch follow the "
                              "node count; per-GPU batch kept)", o.plan);
  } else {
    const PlanRequest request = base_request(o);
    const PlanResult result = search_plans(request);
    if (!result.best) throw NoPlanFits(fmt::format("no plan fits the base point of {} on {} GPUs", request.model.name,
                                                   request.cluster.world_size()));
    base = result.best->plan;
    page.rows = sweep_request(request, points);
    page.source = "Re-planned at every point (fsdpx plan's search; the best plan per point)";
  }
  EngineOptions eo;
  eo.record_ops = true;
  const Simulation sim = with_errors_naming(input, "plan", [&] { return simulate(base, eo); });
  page.base_plan = &base;
  page.base_sim = &sim;
  page.wrappings = compare_wrappings(base);
  page.title = fmt::format("{} on {} ({} GPUs)", base.model.name, base.cluster.name, base.cluster.world_size());
  std::printf("%s\nbase plan: %s\n\nwhat-if points:\n%s\nwrapping policies on the base plan:\n%s", page.title.c_str(),
              plan_shape_desc(base).c_str(), rows_text(page.rows, "point").c_str(),
              rows_text(page.wrappings, "wrapping").c_str());
  if (!o.html.empty()) {
    write_output_file(o.html, report_html(page));
    std::printf("HTML report written to %s\n", o.html.c_str());
  }
  if (!o.csv.empty()) {
    write_output_file(o.csv, report_csv(page.axes, page.rows));
    std::printf("CSV written to %s\n", o.csv.c_str());
  }
}

}  // namespace

void setup_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "What-if sweeps over nodes, inter-node bandwidth and sequence length");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans): re-simulated per point");
  sub->add_option("--model", o->model, "Model (re-planned per point; needs --cluster, --seq, --global-batch)");
  sub->add_option("--cluster", o->cluster, "Cluster name under configs/clusters or a JSON file");
  sub->add_option("--nodes", o->nodes, "Number of nodes of the base point")->check(kPositive);
  sub->add_option("--world-size", o->world_size, "Number of GPUs of the base point")->check(kPositive);
  sub->add_option("--seq", o->seq, "Sequence length of the base point")->check(kPositive);
  sub->add_option("--global-batch", o->global_batch, "Sequences per step at the base point")->check(kPositive);
  sub->add_option("--memory-limit", o->memory_limit_gib, "Memory per GPU in GiB when re-planning")->check(kPositive);
  sub->add_option("--vary", o->vary, "NAME=V1,V2,... with NAME nodes, inter_node_gbit (per GPU) or seq; repeat for a grid");
  sub->add_option("--html", o->html, "Write the self-contained HTML report (SVG charts) to this file");
  sub->add_option("--csv", o->csv, "Write one CSV row per point to this file");
  sub->callback([o] { run_report(*o); });
}

}  // namespace fsdpx
