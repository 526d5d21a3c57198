// tools/report/report_charts_sweep.cpp — the charts across what-if points: a metric against the first varied
// parameter (one line per combination of the others, failed points leave gaps, out-of-memory points carry
// a red cross) and one peak-memory bar per point or plan, stacked by category, against the memory capacity.
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
  switch (m) {
    case SweepMetric::tokens_per_s_per_gpu: return r.metrics.tokens_per_s_per_gpu;
    case SweepMetric::cluster_tokens_per_s: return cluster_tokens_per_s(r);
    case SweepMetric::peak_memory: return r.metrics.peak_memory_total_bytes / kGiB;
  }
  return 0;
}

// The memory capacity the rows were judged against (the same GPU at every point).
double capacity_bytes(const std::vector<WhatIfRow>& rows) {
  double c = 0;
  for (const WhatIfRow& r : rows) c = std::max(c, r.memory_capacity_bytes);
  return c;
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
  std::vector<bool> oom;                 // per x position: peak above the memory capacity
};

std::string oom_mark(double x, double y, const std::string& name) {
  return fmt::format("<path class=\"oom-mark\" d=\"M{:.1f},{:.1f} l12,12 m0,-12 l-12,12\" stroke=\"#d00000\" "
                     "stroke-width=\"3\"><title>{}out of memory</title></path>\n", x - 6, y - 6,
                     xml_escape(name.empty() ? "" : name + ": "));
}

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
    if (s.oom[i]) out += oom_mark(x, y, s.name);
  }
  return fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, color) + out;
}

std::string hbm_line_h(const SvgFrame& f, double hbm_gib, double y_max) {
  const double y = f.y_at(hbm_gib / y_max);
  return fmt::format("<line class=\"hbm\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#b00000\" "
                     "stroke-dasharray=\"6,4\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#b00000\">"
                     "capacity {:.1f} GiB</text>\n",
                     f.left, y, f.left + f.plot_w(), y, f.left + f.plot_w(), y - 4, hbm_gib);
}

// One row of the breakdown chart: label, stacked category segments and the total (or the error).
std::string breakdown_bar(const SvgFrame& f, const WhatIfRow& r, double y, double bar_h, double x_max) {
  const bool oom = row_status(r) == RowStatus::out_of_memory;
  std::string out = fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}</text>\n",
                                f.left - 8, y + bar_h - 4, oom ? "#d00000" : "#333333", xml_escape(r.label.substr(0, 34)));
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
  return out + fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\"{}>{:.1f} GiB{}</text>\n", x + 4, y + bar_h - 4,
                           oom ? "#d00000" : "#333333", oom ? " class=\"oom-mark\" font-weight=\"bold\"" : "",
                           r.metrics.peak_memory_total_bytes / kGiB, oom ? " OUT OF MEMORY" : "");
}

// The x positions (first setting's values) and one series per combination of the other settings.
std::vector<Series> collect_series(const std::vector<WhatIfRow>& rows, SweepMetric metric, std::vector<std::string>& xs) {
  std::vector<Series> series;
  for (const WhatIfRow& r : rows) {
    const std::string x = x_label(r.point), key = series_key(r.point);
    auto xi = std::find(xs.begin(), xs.end(), x);
    if (xi == xs.end()) xi = xs.insert(xs.end(), x);
    auto si = std::find_if(series.begin(), series.end(), [&key](const Series& s) { return s.name == key; });
    if (si == series.end()) si = series.insert(series.end(), Series{key, {}, {}});
    const std::size_t i = std::size_t(xi - xs.begin());
    if (si->y.size() <= i) si->y.resize(i + 1), si->oom.resize(i + 1);
    if (r.error.empty()) si->y[i] = metric_value(r, metric);
    si->oom[i] = row_status(r) == RowStatus::out_of_memory;
  }
  for (Series& s : series) s.y.resize(xs.size()), s.oom.resize(xs.size());
  return series;
}

}  // namespace

std::string chart_sweep(const std::vector<WhatIfRow>& rows, SweepMetric metric, const std::string& id,
                        const std::string& x_name) {
  const bool memory = metric == SweepMetric::peak_memory;
  const double capacity_gib = capacity_bytes(rows) / kGiB;
  std::vector<std::string> xs;
  const std::vector<Series> series = collect_series(rows, metric, xs);
  double y_max = memory ? capacity_gib : 0;
  for (const Series& s : series)
    for (const auto& v : s.y) y_max = std::max(y_max, v.value_or(0));
  std::vector<std::string> names, colors;
  for (std::size_t i = 0; i < series.size(); ++i)
    if (!series[i].name.empty()) names.push_back(series[i].name), colors.push_back(series_color(int(i)));
  SvgFrame f;
  f.width = 430, f.left = 64;
  f.top = 40 + 16 * double(svg_legend_rows(names, f.plot_w()));
  f.height = f.top + 300 - 56;  // the plot keeps its height whatever the legend takes
  y_max = nice_axis_max(y_max * 1.05, 5);
  const std::string title = memory ? "Peak memory per GPU"
                            : metric == SweepMetric::cluster_tokens_per_s ? "Cluster throughput" : "Throughput per GPU";
  std::string out = svg_open(id, f, title);
  out += svg_y_axis(f, y_max, 5, memory ? "GiB" : "tokens/s");
  if (memory && capacity_gib > 0) out += hbm_line_h(f, capacity_gib, y_max);
  std::vector<double> fr;
  for (std::size_t i = 0; i < xs.size(); ++i) fr.push_back((double(i) + 0.5) / double(xs.size()));
  out += svg_x_ticks(f, fr, xs, x_name);
  for (std::size_t i = 0; i < series.size(); ++i) out += series_svg(f, series[i], y_max, series_color(int(i)));
  if (!names.empty()) out += svg_legend(f.left, 36, names, colors, f.plot_w());
  return out + svg_close();
}

std::string chart_memory_breakdown(const std::vector<WhatIfRow>& rows) {
  const double hbm_bytes = capacity_bytes(rows);
  constexpr double kRowH = 24, kBarH = 16;
  SvgFrame f;
  const bool any_oom = std::any_of(rows.begin(), rows.end(),
                                   [](const WhatIfRow& r) { return row_status(r) == RowStatus::out_of_memory; });
  f.left = 230, f.right = any_oom ? 170 : 90, f.top = 56;
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
  out += svg_legend(f.left, 36, names, colors, f.plot_w());
  return out + svg_close();
}

}  // namespace fsdpx
