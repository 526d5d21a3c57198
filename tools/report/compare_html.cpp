// tools/report/compare_html.cpp — the compare page: header, step time, a grouped bar chart per phase
// (predicted and measured side by side) and the two tables.
#include "tools/report/compare_html.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"
#include "tools/format.h"
#include "tools/report/html_frame.h"
#include "tools/report/report_svg.h"

namespace fsdpx {

namespace {

// After the base rules of html_frame.h.
const char* kStyle = R"(td:first-child,th:first-child{text-align:left}.over{color:#b00000}.under{color:#1f5fa0})";

std::string percent(double error) { return fmt::format("{:+.1f}%", 100 * error); }

// Over-predictions red, under-predictions blue.
std::string error_cell(double error) {
  return fmt::format("<td class=\"{}\">{}</td>", error > 0 ? "over" : "under", percent(error));
}

std::string phase_chart(const Comparison& c) {
  SvgFrame f;
  f.height = 340, f.top = 56;
  double top = 0;
  for (const PhaseComparison& p : c.phases) top = std::max({top, p.predicted_s, p.measured_s});
  const double max_ms = nice_axis_max(std::max(top * 1e3, 1e-3), 5);
  std::string out = svg_open("fig-compare-phases-svg", f, "Busy time per phase: predicted and measured");
  out += svg_y_axis(f, max_ms, 5, "ms");
  const double slot = f.plot_w() / double(std::max<std::size_t>(c.phases.size(), 1)), bar = slot * 0.35;
  std::vector<double> at;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < c.phases.size(); ++i) {
    const PhaseComparison& p = c.phases[i];
    const double x = f.left + slot * double(i) + slot * 0.15;
    for (int k = 0; k < 2; ++k) {
      const double v_ms = (k == 0 ? p.predicted_s : p.measured_s) * 1e3, h = f.plot_h() * v_ms / max_ms;
      out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} {}: {}</title></rect>)",
                         x + bar * k, f.y_at(0) - h, bar, h, series_color(k), xml_escape(p.phase),
                         k == 0 ? "predicted" : "measured", seconds(v_ms * 1e-3));
      out += "\n";
    }
    at.push_back((slot * (double(i) + 0.5)) / f.plot_w());
    labels.push_back(p.phase);
  }
  out += svg_x_ticks(f, at, labels, "phase");
  out += svg_legend(f.left, 36, {"predicted", "measured"}, {series_color(0), series_color(1)}, f.plot_w());
  return out + svg_close();
}

std::string phase_table(const Comparison& c) {
  std::string out = "<table id=\"table-compare-phases\">\n<tr><th>phase</th><th>ops</th><th>predicted</th>"
                    "<th>measured</th><th>miss</th><th>error</th></tr>\n";
  for (const PhaseComparison& p : c.phases)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>\n", xml_escape(p.phase), p.ops,
                       seconds(p.predicted_s), seconds(p.measured_s), seconds(std::abs(p.predicted_s - p.measured_s)),
                       error_cell(p.error()));
  return out + "</table>\n";
}

std::string op_table(const Comparison& c, bool stages) {
  std::string out = fmt::format("<table id=\"table-compare-ops\">\n<tr><th>op</th>{}<th>kind</th><th>predicted</th>"
                                "<th>measured</th><th>miss</th><th>error</th><th>samples</th></tr>\n",
                                stages ? "<th>stage</th>" : "");
  for (const OpComparison& o : c.ops)
    out += fmt::format("<tr><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td></tr>\n",
                       xml_escape(o.name), stages ? fmt::format("<td>{}</td>", o.role) : "", op_kind_name(o.kind),
                       seconds(o.predicted_s), seconds(o.measured_s), seconds(std::abs(o.miss_s())),
                       error_cell(o.error()), o.samples);
  return out + "</table>\n";
}

}  // namespace

std::string compare_html(const ComparePage& page) {
  FSDP_CHECK(page.comparison != nullptr, "compare_html: no comparison");
  const Comparison& c = *page.comparison;
  const double step_error = c.measured_step_s > 0 ? c.predicted_step_s / c.measured_step_s - 1 : 0;
  std::string out = html_page_open("fsdpx compare: " + page.title, kStyle);
  out += fmt::format("<p>Measured: {}. Step time predicted {}, measured {} (error {}). Error is predicted / measured "
                     "- 1: positive when the simulator predicts more time than was measured.</p>\n",
                     xml_escape(page.measured), seconds(c.predicted_step_s), seconds(c.measured_step_s),
                     percent(step_error));
  out += "<h2>Per phase</h2>\n<figure id=\"fig-compare-phases\">\n" + phase_chart(c) +
         "<figcaption>Busy time per phase, summed over its ops (and pipeline stages); overlapped communication "
         "counts in full, so phases do not add up to the step time. Measured collectives include waiting for "
         "their peers.</figcaption>\n</figure>\n" + phase_table(c);
  out += "<h2>Per op, largest misses first</h2>\n" + op_table(c, page.stages);
  return out + kHtmlPageClose;
}

}  // namespace fsdpx
