// tools/report/report_html.cpp — assembles the report page: a header, the base plan's step (memory and
// timeline charts), the sweep (line charts and table), the wrapping policies side by side, and the
// memory breakdown bars. Each chart sits in a <figure> with an id and a <figcaption>.
#include <fmt/format.h>

#include "tools/format.h"
#include "tools/report/report_charts.h"
#include "tools/report/report_html.h"
#include "tools/report/report_page.h"
#include "tools/report/report_svg.h"

namespace fsdpx {

namespace {

// After the base rules of report_page.h.
const char* kStyle = R"(td:first-child,th:first-child,td:last-child,th:last-child{text-align:left}td:last-child{white-space:normal}.err{color:#b00000;text-align:left}.row{display:flex;gap:12px})";

std::string figure(const std::string& id, const std::string& svgs, const std::string& caption) {
  return fmt::format("<figure id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n", id, svgs, xml_escape(caption));
}

std::string rows_table(const std::vector<WhatIfRow>& rows, const char* first_column) {
  std::string out = fmt::format(
      "<table>\n<tr><th>{}</th><th>step time</th><th>tokens/s/GPU</th><th>MFU</th><th>exposed comm</th>"
      "<th>peak memory</th><th>plan</th></tr>\n", first_column);
  for (const WhatIfRow& r : rows) {
    if (!r.error.empty()) {
      out += fmt::format("<tr><td>{}</td><td class=\"err\" colspan=\"6\">{}</td></tr>\n", xml_escape(r.label), xml_escape(r.error));
      continue;
    }
    const PointMetrics& m = r.metrics;
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.0f}</td><td>{:.1f}%</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       xml_escape(r.label), seconds(m.step_time_s), m.tokens_per_s_per_gpu, 100 * m.mfu,
                       seconds(m.exposed_comm_s), gib(m.peak_memory_total_bytes), xml_escape(r.plan_desc));
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

std::string sweep_section(const ReportPage& page) {
  const double hbm = page.base_plan ? page.base_plan->cluster.gpu.hbm_bytes : 0;
  std::string axes;
  for (const WhatIfAxis& a : page.axes) axes += std::string(axes.empty() ? "" : ", ") + whatif_param_name(a.param);
  std::string out = fmt::format("<h2>What-if sweep{}</h2>\n<p>{}. inter_node_gbit is the achievable inter-node "
                                "bandwidth per GPU, one direction.</p>\n",
                                axes.empty() ? "" : " over " + axes, xml_escape(page.source));
  const std::string charts = "<div class=\"row\">\n" +
                             chart_sweep(page.axes, page.rows, SweepMetric::tokens_per_s_per_gpu, hbm) +
                             chart_sweep(page.axes, page.rows, SweepMetric::peak_memory, hbm) + "</div>\n";
  out += figure("fig-sweep", charts,
                "Simulated tokens/s per GPU and peak memory per GPU against the first varied parameter (one line per "
                "value of the others); a gap is a point that could not be simulated (see the table).");
  return out + rows_table(page.rows, "point");
}

}  // namespace

std::string report_html(const ReportPage& page) {
  std::string out = html_page_open("fsdpx report: " + page.title, kStyle);
  if (page.base_sim && page.base_plan) out += step_section(page);
  out += sweep_section(page);
  std::vector<WhatIfRow> bars = page.rows;
  if (!page.wrappings.empty()) {
    out += "<h2>Wrapping policies side by side (base point)</h2>\n" + rows_table(page.wrappings, "wrapping");
    for (WhatIfRow r : page.wrappings) bars.push_back(std::move(r));
  }
  out += "<h2>Memory breakdown per plan</h2>\n";
  out += figure("fig-memory-breakdown", chart_memory_breakdown(bars, page.base_plan ? page.base_plan->cluster.gpu.hbm_bytes : 0),
                "Peak memory per GPU of every point and wrapping policy, by category; the dashed line is the GPU's HBM.");
  return out + kHtmlPageClose;
}

}  // namespace fsdpx
