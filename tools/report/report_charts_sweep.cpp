// tools/report/report_charts_sweep.cpp — the charts across what-if points: a metric against the first varied
// parameter (one line per combination of the others, failed points leave gaps) and one peak-memory
// bar per point or plan, stacked by category, against the GPU's HBM.
#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "tools/report/report_charts.h"
#include "tools/report/report_svg.h"

namespace fsdpx {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double metric_value(const WhatIfRow& r, SweepMetric m) {
  return m == SweepMetric::tokens_per_s_per_gpu ? r.metrics.tokens_per_s_per_gpu : r.metrics.peak_memory_total_bytes / kGiB;
}

// The label of a point without its first setting: the series it belongs to.
std::string series_key(const WhatIfPoint& p) {
  WhatIfPoint rest = p;
  if (!rest.settings.empty()) rest.settings.erase(rest.settings.begin());
  return rest.settings.empty() ? "" : rest.label();
}

std::string x_label(const WhatIfPoint& p) {
  if (p.settings.empty()) return "base";
  WhatIfPoint first;
  first.settings.push_back(p.settings.front());
  const std::string l = first.label();
  return l.substr(l.find('=') + 1);
}

struct Series {
  std::string name;
  std::vector<std::optional<double>> y;  // per x position
};

std::string series_svg(const SvgFrame& f, const Series& s, double y_max, const std::string& color) {
  const std::size_t n = s.y.size();
  std::string out, path;
  for (std::size_t i = 0; i < n; ++i) {
    if (!s.y[i]) {
      path += " ";  // a gap: the next point starts a new sub-path
      continue;
    }
    const double x = f.x_at((double(i) + 0.5) / double(n)), y = f.y_at(*s.y[i] / y_max);
    const bool start = i == 0 || !s.y[i - 1];
    path += fmt::format("{}{:.1f},{:.1f} ", start ? "M" : "L", x, y);
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}{:.4g}</title></circle>\n", x, y,
                       color, xml_escape(s.name.empty() ? "" : s.name + ": "), *s.y[i]);
  }
  return fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, color) + out;
}

std::string hbm_line_h(const SvgFrame& f, double hbm_gib, double y_max) {
  const double y = f.y_at(hbm_gib / y_max);
  return fmt::format("<line class=\"hbm\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b00000\" "
                     "stroke-dasharray=\"6,4\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#b00000\">"
                     "HBM {:.1f} GiB</text>\n",
                     f.left, y, f.left + f.plot_w(), y, f.left + f.plot_w(), y - 4, hbm_gib);
}

// One row of the breakdown chart: label, stacked category segments and the total (or the error).
std::string breakdown_bar(const SvgFrame& f, const WhatIfRow& r, double y, double bar_h, double x_max) {
  std::string out = fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#333333\">{}</text>\n",
                                f.left - 8, y + bar_h - 4, xml_escape(r.label.substr(0, 34)));
  if (!r.error.empty())
    return out + fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" fill=\"#b00000\">not simulated: {}</text>\n", f.left + 4,
                             y + bar_h - 4, xml_escape(r.error.substr(0, 90)));
  double x = f.left;
  for (int c = 0; c < kMemCategoryCount; ++c) {
    const double gib = r.metrics.peak_memory_bytes[std::size_t(c)] / kGiB, w = gib / x_max * f.plot_w();
    out += fmt::format("<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\"><title>{}: {:.2f} GiB</title></rect>\n",
                       x, y, w, bar_h, mem_category_color(c), mem_category_name(MemCategory(c)), gib);
    x += w;
  }
  return out + fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333333\">{:.1f} GiB</text>\n", x + 4, y + bar_h - 4,
                           r.metrics.peak_memory_total_bytes / kGiB);
}

}  // namespace

std::string chart_sweep(const std::vector<WhatIfAxis>& axes, const std::vector<WhatIfRow>& rows, SweepMetric metric,
                        double hbm_bytes) {
  const bool memory = metric == SweepMetric::peak_memory;
  std::vector<std::string> xs;
  std::vector<Series> series;
  for (const WhatIfRow& r : rows) {
    const std::string x = x_label(r.point), key = series_key(r.point);
    auto xi = std::find(xs.begin(), xs.end(), x);
    if (xi == xs.end()) xi = xs.insert(xs.end(), x);
    auto si = std::find_if(series.begin(), series.end(), [&key](const Series& s) { return s.name == key; });
    if (si == series.end()) si = series.insert(series.end(), Series{key, {}});
    const std::size_t i = std::size_t(xi - xs.begin());
    if (si->y.size() <= i) si->y.resize(i + 1);
    if (r.error.empty()) si->y[i] = metric_value(r, metric);
  }
  double y_max = memory ? hbm_bytes / kGiB : 0;
  for (Series& s : series) {
    s.y.resize(xs.size());
    for (const auto& v : s.y) y_max = std::max(y_max, v.value_or(0));
  }
  y_max = nice_axis_max(y_max * 1.05, 5);
  SvgFrame f;
  f.width = 430, f.top = 56, f.height = 300, f.left = 64;
  const std::string title = memory ? "Peak memory per GPU" : "Throughput per GPU";
  std::string out = svg_open(memory ? "svg-sweep-memory" : "svg-sweep-throughput", f, title);
  out += svg_y_axis(f, y_max, 5, memory ? "GiB" : "tokens/s");
  if (memory && hbm_bytes > 0) out += hbm_line_h(f, hbm_bytes / kGiB, y_max);
  std::vector<double> fr;
  for (std::size_t i = 0; i < xs.size(); ++i) fr.push_back((double(i) + 0.5) / double(xs.size()));
  out += svg_x_ticks(f, fr, xs, axes.empty() ? "(no --vary)" : whatif_param_name(axes.front().param));
  std::vector<std::string> names, colors;
  for (std::size_t i = 0; i < series.size(); ++i) {
    out += series_svg(f, series[i], y_max, series_color(int(i)));
    if (!series[i].name.empty()) names.push_back(series[i].name), colors.push_back(series_color(int(i)));
  }
  if (!names.empty()) out += svg_legend(f.left, 36, names, colors);
  return out + svg_close();
}

std::string chart_memory_breakdown(const std::vector<WhatIfRow>& rows, double hbm_bytes) {
  constexpr double kRowH = 24, kBarH = 16;
  SvgFrame f;
  f.left = 230, f.right = 90, f.top = 56;
  f.height = f.top + kRowH * double(std::max<std::size_t>(1, rows.size())) + f.bottom;
  double x_max = hbm_bytes / kGiB;
  for (const WhatIfRow& r : rows) x_max = std::max(x_max, r.metrics.peak_memory_total_bytes / kGiB);
  x_max = nice_axis_max(x_max * 1.02, 5);
  std::string out = svg_open("svg-memory-breakdown", f, "Peak memory per GPU by category, per plan");
  for (std::size_t i = 0; i < rows.size(); ++i) out += breakdown_bar(f, rows[i], f.top + kRowH * double(i) + (kRowH - kBarH) / 2, kBarH, x_max);
  const double bottom = f.top + f.plot_h();
  std::vector<double> fr;
  std::vector<std::string> labels;
  for (int i = 0; i <= 5; ++i) fr.push_back(i / 5.0), labels.push_back(fmt::format("{:g}", x_max * i / 5));
  out += svg_x_ticks(f, fr, labels, "GiB per GPU at the peak (allocator headroom in other)");
  if (hbm_bytes > 0) {
    const double x = f.x_at(hbm_bytes / kGiB / x_max);
    out += fmt::format("<line class=\"hbm\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b00000\" "
                       "stroke-dasharray=\"6,4\"/>\n", x, f.top - 4, x, bottom);
  }
  std::vector<std::string> names, colors;
  for (int c = 0; c < kMemCategoryCount; ++c) names.push_back(mem_category_name(MemCategory(c))), colors.push_back(mem_category_color(c));
  out += svg_legend(f.left, 36, names, colors);
  return out + svg_close();
}

}  // namespace fsdpx
