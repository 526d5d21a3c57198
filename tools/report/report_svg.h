// tools/report/report_svg.h — small SVG helpers for `fsdpx report`'s inline charts: a plot frame, axes with
// "nice" ticks, legends, XML escaping and the category / op-kind palettes. Static SVG only (no
// script): tooltips are <title> children. Leaves out log axes and interactive zoom.
#pragma once

#include <string>
#include <vector>

namespace fsdpx {

// A chart of `width` x `height` pixels with margins around the plot area.
struct SvgFrame {
  double width = 880, height = 300;
  double left = 70, right = 20, top = 36, bottom = 46;
  double plot_w() const { return width - left - right; }
  double plot_h() const { return height - top - bottom; }
  double x_at(double fraction) const { return left + fraction * plot_w(); }
  double y_at(double fraction) const { return top + (1 - fraction) * plot_h(); }  // 0 at the bottom
};

std::string xml_escape(const std::string& s);
// The smallest 1, 2, 2.5 or 5 x 10^k at or above v (v > 0); 1 for v <= 0.
double nice_ceiling(double v);
// An axis maximum of `ticks` equal nice steps covering v.
double nice_axis_max(double v, int ticks);

// <svg id=... viewBox=...> with a <title> (accessible name) and a heading drawn at the top left.
std::string svg_open(const std::string& id, const SvgFrame& f, const std::string& title);
std::string svg_close();
// Horizontal grid lines and labels for 0..max in `ticks` steps; `unit` is drawn at the top.
std::string svg_y_axis(const SvgFrame& f, double max, int ticks, const std::string& unit);
// Tick labels at fractions of the plot width (same length), and the axis name under them.
std::string svg_x_ticks(const SvgFrame& f, const std::vector<double>& fractions, const std::vector<std::string>& labels,
                        const std::string& name);
// Colour swatches with names from (x, y), wrapped onto new rows (16 px apart) at `max_width`; names
// longer than 40 characters are shortened (the whole name is the tooltip). svg_legend_rows: how many rows.
std::string svg_legend(double x, double y, const std::vector<std::string>& names, const std::vector<std::string>& colors,
                       double max_width);
int svg_legend_rows(const std::vector<std::string>& names, double max_width);

// Colours of the memory categories (MemCategory order) and the op kinds (OpKind order).
const std::string& mem_category_color(int category);
const std::string& op_kind_color(int kind);
// A colour for the i-th series of a line chart.
const std::string& series_color(int i);

}  // namespace fsdpx
