// simulator/case_uncertainty.cpp — reading the unsure-bandwidth entry of a case's `uncertain` list
// (case_uncertainty.h): "inter-node bandwidth between LO and HI Gb/s per GPU", then an optional ": why".
#include "simulator/case_uncertainty.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/input_ranges.h"
#include "core/json_reader.h"

namespace fsdpx {

namespace {

// A plain decimal at the start of `s` (no sign, no exponent); advances `s` past it.
std::optional<double> leading_number(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) != 0 || s[n] == '.')) ++n;
  if (n == 0) return std::nullopt;
  const std::string text(s.substr(0, n));
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  s.remove_prefix(n);
  return v;
}

bool consume(std::string_view& s, std::string_view word) {
  if (s.substr(0, word.size()) != word) return false;
  s.remove_prefix(word.size());
  return true;
}

bool in_range(double v, NumberRange r) { return v >= r.min && v <= r.max; }

}  // namespace

std::optional<BandwidthRange> parse_bandwidth_range(const std::string& entry, const std::string& file,
                                                    const std::string& path) {
  std::string_view s = entry;
  if (!consume(s, kBandwidthRangePrefix)) return std::nullopt;
  const auto fail = [&](const std::string& why) {
    throw_config_error(file, path, fmt::format("\"{}LO and HI Gb/s per GPU\" expected: {}", kBandwidthRangePrefix, why));
  };
  const std::optional<double> low = leading_number(s);
  if (!low || !consume(s, " and ")) fail("no LO");
  const std::optional<double> high = leading_number(s);
  if (!high || !consume(s, " Gb/s per GPU")) fail("no HI");
  if (!s.empty() && s.substr(0, 1) != ":") fail(fmt::format("unexpected \"{}\"", s));
  const NumberRange r = input_range::kGbitPerS;
  if (!in_range(*low, r) || !in_range(*high, r))
    fail(fmt::format("bandwidths must lie in [{:g}, {:g}] Gb/s", r.min, r.max));
  if (*low > *high) fail(fmt::format("LO {:g} above HI {:g}", *low, *high));
  return BandwidthRange{*low, *high};
}

}  // namespace fsdpx
