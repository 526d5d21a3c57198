// tools/report/report_charts_step.cpp — the two charts of one simulated step, both for rank 0 of role 0:
// live memory by category over time (stacked, the largest value in each pixel column so peaks are
// never lost) and the per-stream timeline (ops narrower than a pixel merged with their neighbours of
// the same kind). Time runs 0..step time on the x axis in milliseconds.
#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "tools/report/report_charts.h"
#include "tools/report/report_svg.h"

namespace fsdpx {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kMaxRects = 6000;  // SVG size cap for the timeline

using Stack = std::array<double, kMemCategoryCount>;

double total(const Stack& s) {
  double t = 0;
  for (double v : s) t += v;
  return t;
}

// Per pixel column: the state with the largest total among the one entering the column and the
// samples inside it.
std::vector<Stack> memory_columns(const Simulation& sim, int columns) {
  std::vector<const MemorySample*> samples;
  for (const MemorySample& m : sim.engine.memory_samples)
    if (m.role == 0 && m.rank == 0) samples.push_back(&m);
  std::stable_sort(samples.begin(), samples.end(), [](const auto* a, const auto* b) { return a->at_ns < b->at_ns; });
  const double step_ns = std::max<double>(1, double(sim.engine.step_time_ns));
  std::vector<Stack> cols(std::size_t(columns), Stack{});
  Stack state{};
  std::size_t next = 0;
  for (int c = 0; c < columns; ++c) {
    const double end_ns = step_ns * (c + 1) / columns;
    Stack best = state;
    while (next < samples.size() && (double(samples[next]->at_ns) < end_ns || c == columns - 1)) {
      state = samples[next++]->by_category;
      if (total(state) > total(best)) best = state;
    }
    cols[std::size_t(c)] = best;
  }
  return cols;
}

// "x,y" points of a step line through per-column values, run-length merged.
std::string step_points(const SvgFrame& f, const std::vector<double>& y_frac, bool reverse) {
  const int n = int(y_frac.size());
  std::vector<std::pair<double, double>> pts;
  for (int c = 0; c < n; ++c) {
    const double y = f.y_at(y_frac[std::size_t(c)]);
    if (!pts.empty() && pts.back().second == y) {
      pts.back().first = f.x_at(double(c + 1) / n);
      continue;
    }
    pts.emplace_back(f.x_at(double(c) / n), y);
    pts.emplace_back(f.x_at(double(c + 1) / n), y);
  }
  if (reverse) std::reverse(pts.begin(), pts.end());
  std::string out;
  for (const auto& [x, y] : pts) out += fmt::format("{:.1f},{:.1f} ", x, y);
  return out;
}

std::string time_ticks(const SvgFrame& f, double step_s) {
  const double step_ms = step_s * 1e3;
  const double tick_ms = nice_ceiling(step_ms / 8);
  std::vector<double> fr;
  std::vector<std::string> labels;
  for (double t = 0; t <= step_ms * (1 + 1e-9); t += tick_ms) {
    fr.push_back(t / step_ms);
    labels.push_back(fmt::format("{:g}", t));
  }
  return svg_x_ticks(f, fr, labels, "time in step (ms)");
}

struct Rect {
  double x0 = 0, x1 = 0;
  int kind = 0;
  int count = 0;
  std::string name;
  TimeNs start_ns = 0, end_ns = 0;
};

std::string rect_svg(const Rect& r, double y, double h) {
  const std::string tip = r.count == 1
      ? fmt::format("{} ({:.3f}-{:.3f} ms)", r.name, double(r.start_ns) * 1e-6, double(r.end_ns) * 1e-6)
      : fmt::format("{} {} ops from {} ({:.3f}-{:.3f} ms)", r.count, op_kind_name(OpKind(r.kind)), r.name,
                    double(r.start_ns) * 1e-6, double(r.end_ns) * 1e-6);
  return fmt::format("<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}</title></rect>\n",
                     r.x0, y, std::max(0.5, r.x1 - r.x0), h, op_kind_color(r.kind), xml_escape(tip));
}

// Rects of one stream: ops in start order, a sub-pixel op merged into the previous rect of its kind
// when they touch (within half a pixel).
std::vector<Rect> stream_rects(const Simulation& sim, int stream, const SvgFrame& f, double px_per_ns) {
  std::vector<const OpTiming*> ops;
  for (const OpTiming& t : sim.engine.ops) {
    const Op& op = sim.program.roles[0].ops[std::size_t(t.op)];
    if (t.role == 0 && t.rank == 0 && int(op.stream) == stream && op.kind != OpKind::free) ops.push_back(&t);
  }
  std::stable_sort(ops.begin(), ops.end(), [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  std::vector<Rect> rects;
  for (const OpTiming* t : ops) {
    const Op& op = sim.program.roles[0].ops[std::size_t(t->op)];
    const double x0 = f.left + double(t->start_ns) * px_per_ns, x1 = f.left + double(t->end_ns) * px_per_ns;
    if (!rects.empty()) {
      Rect& last = rects.back();
      const bool thin = x1 - x0 < 1 || last.x1 - last.x0 < 1;
      if (thin && last.kind == int(op.kind) && x0 - last.x1 < 0.5) {
        last.x1 = std::max(last.x1, x1), last.end_ns = std::max(last.end_ns, t->end_ns), ++last.count;
        continue;
      }
    }
    rects.push_back(Rect{x0, x1, int(op.kind), 1, op.name, t->start_ns, t->end_ns});
  }
  return rects;
}

}  // namespace

std::string chart_memory_over_step(const Simulation& sim) {
  SvgFrame f;
  f.top = 56;
  f.height = 340;
  const int columns = int(f.plot_w());
  const std::vector<Stack> cols = memory_columns(sim, columns);
  double max_bytes = 0;
  for (const Stack& s : cols) max_bytes = std::max(max_bytes, total(s));
  const double y_max_gib = nice_axis_max(max_bytes / kGiB, 5);
  std::string out = svg_open("svg-memory-step", f, "Live memory over one step by category (rank 0)");
  out += svg_y_axis(f, y_max_gib, 5, "GiB");
  std::vector<double> below(std::size_t(columns), 0.0);
  for (int c = 0; c < kMemCategoryCount; ++c) {
    std::vector<double> above = below;
    for (int i = 0; i < columns; ++i) above[std::size_t(i)] += cols[std::size_t(i)][std::size_t(c)] / kGiB / y_max_gib;
    out += fmt::format("<polygon class=\"mem-{}\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"none\" points=\"{}{}\"/>\n",
                       mem_category_name(MemCategory(c)), mem_category_color(c), step_points(f, above, false),
                       step_points(f, below, true));
    below = std::move(above);
  }
  out += time_ticks(f, sim.step_time_s);
  std::vector<std::string> names, colors;
  for (int c = 0; c < kMemCategoryCount; ++c) names.push_back(mem_category_name(MemCategory(c))), colors.push_back(mem_category_color(c));
  out += svg_legend(f.left, 36, names, colors, f.plot_w());
  return out + svg_close();
}

std::string chart_stream_timeline(const Simulation& sim) {
  constexpr double kRowH = 26, kBarH = 18;
  SvgFrame f;
  f.left = 110;
  f.top = 50;
  f.height = f.top + kRowH * kStreamCount + f.bottom;
  const double px_per_ns = f.plot_w() / std::max<double>(1, double(sim.engine.step_time_ns));
  std::string out = svg_open("svg-stream-timeline", f, "Per-stream timeline of one step (rank 0)");
  int drawn = 0, dropped = 0;
  for (int s = 0; s < kStreamCount; ++s) {
    const double y = f.top + kRowH * s;
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#333333\">{}</text>\n", f.left - 8,
                       y + kBarH - 5, stream_name(StreamKind(s)));
    out += fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#f4f4f4\"/>\n", f.left, y,
                       f.plot_w(), kBarH);
    for (const Rect& r : stream_rects(sim, s, f, px_per_ns)) {
      if (drawn >= kMaxRects) { ++dropped; continue; }
      out += rect_svg(r, y, kBarH);
      ++drawn;
    }
  }
  out += time_ticks(f, sim.step_time_s);
  if (dropped > 0)
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" fill=\"#b00000\">{} more ops not drawn</text>\n", f.left, f.height - 4, dropped);
  std::vector<std::string> names, colors;
  for (int k = 0; k < 6; ++k) names.push_back(op_kind_name(OpKind(k))), colors.push_back(op_kind_color(k));
  out += svg_legend(f.left, 36, names, colors, f.plot_w());
  return out + svg_close();
}

}  // namespace fsdpx
