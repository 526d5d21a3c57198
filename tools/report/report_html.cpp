// tools/report/report_html.cpp — assembles the report page: a header, the base plan's step (memory and
// timeline charts), each sweep (weak and/or strong scaling: line charts and table), the wrapping policies
// side by side, and the memory breakdown bars. Each chart sits in a <figure> with an id and a
// <figcaption>; rows over the memory capacity are marked in every table and chart.
#include <fmt/format.h>

#include "tools/format.h"
#include "tools/report/report_charts.h"
#include "tools/report/report_html.h"
#include "tools/report/html_frame.h"
#include "tools/report/report_page.h"
#include "tools/report/report_svg.h"

namespace fsdpx {

namespace {

// After the base rules of html_frame.h.
const char* kStyle = R"(table{font-size:11px}th{white-space:normal;vertical-align:bottom}td:last-child{min-width:150px}
td:first-child,th:first-child,td:last-child,th:last-child{text-align:left}td:last-child{white-space:normal}.err{color:#b00000;text-align:left;white-space:normal}tr.oom td{background:#fde2e2}td.status{text-align:left}tr.oom td.status{color:#b00000;font-weight:bold}.row{display:flex;gap:12px})";

std::string figure(const std::string& id, const std::string& svgs, const std::string& caption) {
  return fmt::format("<figure id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n", id, svgs, xml_escape(caption));
}

std::string status_cell(RowStatus s) {
  return s == RowStatus::out_of_memory ? "OUT OF MEMORY" : s == RowStatus::ok ? "ok" : "not simulated";
}

std::string rows_table(const std::vector<WhatIfRow>& rows, const char* first_column,
                       const std::optional<double>& train_tokens) {
  std::string out = fmt::format(
      "<table>\n<tr><th>{}</th><th>GPUs</th><th>global batch</th><th>status</th><th>step time</th><th>tokens/s/GPU</th>"
      "<th>cluster tokens/s</th>{}<th>MFU</th><th>exposed comm</th><th>peak memory</th><th>plan</th></tr>\n",
      first_column, train_tokens ? fmt::format("<th>time for {} tokens</th>", human_count(*train_tokens)) : "");
  const int metric_columns = train_tokens ? 8 : 7;
  for (const WhatIfRow& r : rows) {
    const RowStatus status = row_status(r);
    out += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td class=\"status\">{}</td>",
                       status == RowStatus::out_of_memory ? " class=\"oom\"" : "", xml_escape(r.label),
                       r.world_size > 0 ? fmt::format("{}", r.world_size) : "-",
                       r.global_batch > 0 ? fmt::format("{}", r.global_batch) : "-", status_cell(status));
    if (status == RowStatus::error) {
      out += fmt::format("<td class=\"err\" colspan=\"{}\">{}</td></tr>\n", metric_columns, xml_escape(r.error));
      continue;
    }
    const PointMetrics& m = r.metrics;
    out += fmt::format("<td>{}</td><td>{}</td><td>{}</td>", seconds(m.step_time_s), human_count(m.tokens_per_s_per_gpu),
                       human_count(cluster_tokens_per_s(r)));
    if (train_tokens) out += fmt::format("<td>{}</td>", human_duration(*time_to_train_s(r, *train_tokens)));
    out += fmt::format("<td>{:.1f}%</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", 100 * m.mfu, seconds(m.exposed_comm_s),
                       gib(m.peak_memory_total_bytes), xml_escape(r.plan_desc));
  }
  return out + "</table>\n";
}

std::string step_section(const ReportPage& page) {
  const Simulation& sim = *page.base_sim;
  const Plan& p = *page.base_plan;
  std::string out = fmt::format("<h2>One step of the base plan</h2>\n<p>{} on {} node(s) x {} GPUs: {}. Step {}, "
                                "{:.0f} tokens/s/GPU, MFU {:.1f}%, exposed communication {}; peak {} at {}.</p>\n",
                                xml_escape(p.model.name), p.cluster.nodes, p.cluster.gpus_per_node,
                                xml_escape(plan_shape_desc(p)), seconds(sim.step_time_s), sim.tokens_per_s_per_gpu,
                                100 * sim.mfu, seconds(sim.exposed_comm_s), gib(sim.peak_memory_total_bytes),
                                xml_escape(sim.peak_memory_op));
  out += figure("fig-memory-step", chart_memory_over_step(sim),
                "Live bytes of rank 0 by category over one step, stacked (largest value per pixel column). The peak "
                "quoted above adds the allocator headroom, which is not a live allocation.");
  out += figure("fig-stream-timeline", chart_stream_timeline(sim),
                "Ops of rank 0 per stream over one step, coloured by kind; ops narrower than a pixel are merged with "
                "touching neighbours of the same kind (hover for names and times).");
  return out;
}

std::string sweep_section(const ReportPage& page, const ReportSweep& sweep) {
  const bool strong = sweep.scaling == Scaling::strong;
  const std::string x_name = page.axes.empty() ? "(no --vary)" : axis_title(page.axes.front().param, page.base_plan);
  std::string out = fmt::format("<h2>{}</h2>\n<p>{}.</p>\n",
                                page.axes.empty() ? "Base point" : fmt::format("{} scaling sweep over {}", strong ? "Strong" : "Weak", x_name),
                                xml_escape(page.source));
  const std::string prefix = strong ? "svg-strong-" : "svg-sweep-";
  // Strong scaling asks how the whole cluster speeds up; weak scaling how each GPU keeps its rate.
  const SweepMetric throughput = strong ? SweepMetric::cluster_tokens_per_s : SweepMetric::tokens_per_s_per_gpu;
  const std::string charts = "<div class=\"row\">\n" + chart_sweep(sweep.rows, throughput, prefix + "throughput", x_name) +
                             chart_sweep(sweep.rows, SweepMetric::peak_memory, prefix + "memory", x_name) + "</div>\n";
  out += figure(strong ? "fig-sweep-strong" : "fig-sweep", charts,
                fmt::format("Simulated {} and peak memory per GPU. {}. Red crosses: peak memory above the GPU's "
                            "capacity (out of memory); a gap: the point could not be simulated (see the table).",
                            strong ? "cluster tokens/s" : "tokens/s per GPU", sweep_caption(page, sweep)));
  return out + rows_table(sweep.rows, "point", page.train_tokens);
}

}  // namespace

std::string report_html(const ReportPage& page) {
  std::string out = html_page_open("fsdpx report: " + page.title, kStyle);
  if (page.base_sim && page.base_plan) out += step_section(page);
  std::vector<WhatIfRow> bars;
  for (const ReportSweep& sweep : page.sweeps) {
    out += sweep_section(page, sweep);
    for (const WhatIfRow& r : sweep.rows) {
      bars.push_back(r);
      if (page.sweeps.size() > 1) bars.back().label = fmt::format("{} ({})", r.label, scaling_name(sweep.scaling));
    }
  }
  if (!page.wrappings.empty()) {
    out += "<h2>Wrapping policies side by side (base point)</h2>\n" + rows_table(page.wrappings, "wrapping", page.train_tokens);
    bars.insert(bars.end(), page.wrappings.begin(), page.wrappings.end());
  }
  out += "<h2>Memory breakdown per plan</h2>\n";
  out += figure("fig-memory-breakdown", chart_memory_breakdown(bars),
                "Peak memory per GPU of every point and wrapping policy, by category; the dashed line is the GPU's "
                "memory capacity, and bars past it are marked OUT OF MEMORY.");
  return out + kHtmlPageClose;
}

}  // namespace fsdpx
