// tools/report/report_svg.cpp — SVG frame, axes, legend and palettes for the report charts. Colours are the
// Tableau 10 palette (colour-blind-aware, distinct in print).
#include "tools/report/report_svg.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace fsdpx {

namespace {

// Tableau 10: blue, orange, red, teal, green, yellow, purple, pink, brown, grey.
const std::array<std::string, 10> kTableau{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string tick_label(double v) {
  if (v == std::round(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}

std::string svg_open(const std::string& id, const SvgFrame& f, const std::string& title) {
  return fmt::format(
      "<svg id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n<title>{}</title>\n"
      "<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{:.0f}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
      id, f.width, f.height, f.width, f.height, xml_escape(title), f.width, f.height, f.left, xml_escape(title));
}

double nice_axis_max(double v, int ticks) { return ticks * nice_ceiling(v / ticks); }

std::string svg_close() { return "</svg>\n"; }

std::string svg_y_axis(const SvgFrame& f, double max, int ticks, const std::string& unit) {
  std::string out = "<g class=\"y-axis\" stroke-width=\"1\">\n";
  for (int i = 0; i <= ticks; ++i) {
    const double y = f.y_at(double(i) / ticks);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n", f.left, y,
                       f.left + f.plot_w(), y, i == 0 ? "#333333" : "#e0e0e0");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#333333\">{}</text>\n", f.left - 6,
                       y + 4, tick_label(max * i / ticks));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555555\">{}</text>\n", f.left - 6,
                     f.top - 8, xml_escape(unit));
  return out + "</g>\n";
}

std::string svg_x_ticks(const SvgFrame& f, const std::vector<double>& fractions, const std::vector<std::string>& labels,
                        const std::string& name) {
  std::string out = "<g class=\"x-axis\">\n";
  const double y = f.top + f.plot_h();
  for (std::size_t i = 0; i < fractions.size() && i < labels.size(); ++i) {
    const double x = f.x_at(fractions[i]);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333333\"/>\n", x, y, x, y + 4);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n", x, y + 16,
                       xml_escape(labels[i]));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555555\">{}</text>\n",
                     f.left + f.plot_w() / 2, y + 34, xml_escape(name));
  return out + "</g>\n";
}

namespace {

constexpr double kLegendRowH = 16;
constexpr double kLegendCharW = 6.5;  // of the 12px sans-serif text, on average
constexpr std::size_t kLegendMaxChars = 40;

std::string legend_name(const std::string& name) {
  return name.size() <= kLegendMaxChars ? name : name.substr(0, kLegendMaxChars - 3) + "...";
}

double legend_item_w(const std::string& name) { return 24 + kLegendCharW * double(legend_name(name).size()); }

}  // namespace

int svg_legend_rows(const std::vector<std::string>& names, double max_width) {
  int rows = names.empty() ? 0 : 1;
  double x = 0;
  for (const std::string& n : names) {
    if (x > 0 && x + legend_item_w(n) > max_width) ++rows, x = 0;
    x += legend_item_w(n);
  }
  return rows;
}

std::string svg_legend(double x, double y, const std::vector<std::string>& names, const std::vector<std::string>& colors,
                       double max_width) {
  std::string out = "<g class=\"legend\">\n";
  double dx = 0;
  for (std::size_t i = 0; i < names.size() && i < colors.size(); ++i) {
    if (dx > 0 && dx + legend_item_w(names[i]) > max_width) y += kLegendRowH, dx = 0;
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", x + dx, y - 9,
                       colors[i]);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333333\"><title>{}</title>{}</text>\n", x + dx + 14, y,
                       xml_escape(names[i]), xml_escape(legend_name(names[i])));
    dx += legend_item_w(names[i]);
  }
  return out + "</g>\n";
}

const std::string& mem_category_color(int category) {
  // params blue, grads orange, optimizer red, activations teal, transient green, other yellow.
  return kTableau[std::size_t(category) % 6];
}

const std::string& op_kind_color(int kind) {
  // all_gather, forward, backward, reduce_scatter, all_reduce, optimizer, free.
  static const std::array<int, 7> kIndex{0, 4, 2, 1, 6, 8, 9};
  return kTableau[std::size_t(kIndex[std::size_t(kind) % 7])];
}

const std::string& series_color(int i) { return kTableau[std::size_t(i) % kTableau.size()]; }

}  // namespace fsdpx
