// tools/format.h — human-readable numbers and plain-text tables for command output.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fsdpx {

inline std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
inline std::string seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}
inline std::string billions(double n) { return fmt::format("{:.3f} B", n / 1e9); }
// Three significant digits with a k / M / B / T suffix: 3512 -> "3.51 k", 8000 -> "8.00 k", 4.5e5 -> "450 k".
inline std::string human_count(double n) {
  const char* suffix[] = {"", " k", " M", " B", " T"};
  int i = 0;
  while (i < 4 && n >= 999.5) n /= 1000, ++i;
  const int decimals = n < 9.995 ? 2 : n < 99.95 ? 1 : 0;
  return fmt::format("{:.{}f}{}", n, i == 0 && n == double(static_cast<long long>(n)) ? 0 : decimals, suffix[i]);
}
// A duration in the largest unit that reads well: "42.0 s", "12.5 min", "7.3 h", "18.2 days".
inline std::string human_duration(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{:.1f} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

// Text output is read in a terminal: a line longer than `width` breaks at its last space that fits, and the
// continuation lines are indented by `indent` spaces (a word longer than the line stays whole).
inline constexpr std::size_t kTextWidth = 120;
inline std::string wrap_line(const std::string& line, std::size_t indent, std::size_t width = kTextWidth) {
  indent = std::min(indent, width / 2);  // a continuation always has room for text
  std::string out, rest = line;
  while (rest.size() > width) {
    const std::size_t lead = rest.find_first_not_of(' ');
    if (lead == std::string::npos) return out;  // only spaces left
    std::size_t cut = rest.rfind(' ', width);
    if (cut == std::string::npos || cut < lead) cut = rest.find(' ', std::max(width, lead));
    if (cut == std::string::npos) break;
    const std::size_t next = rest.find_first_not_of(' ', cut);
    if (next == std::string::npos) return out + rest.substr(0, rest.find_last_not_of(' ') + 1);
    out += rest.substr(0, cut) + '\n';
    rest = std::string(indent, ' ') + rest.substr(next);
  }
  return out + rest;
}
// Every line of `text` wrapped, continuations indented four spaces past the line's own indent.
inline std::string wrap_text(const std::string& text, std::size_t width = kTextWidth) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    out += wrap_line(line, lead + 4, width) + (end < text.size() ? "\n" : "");
    start = end + 1;
  }
  return out;
}

// Rows of cells printed with each column padded to its widest cell; the first column left-aligned,
// the others right-aligned.
inline std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      out += i == 0 ? fmt::format("  {:<{}}", r[i], width[i]) : fmt::format("  {:>{}}", r[i], width[i]);
    out += '\n';
  }
  return out;
}

}  // namespace fsdpx
