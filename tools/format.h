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
