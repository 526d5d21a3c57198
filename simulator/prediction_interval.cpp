// simulator/prediction_interval.cpp — percentiles of signed errors and leave-one-source-out coverage
// (prediction_interval.h).
#include "simulator/prediction_interval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace fsdpx {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("quantile of no values");
  std::sort(values.begin(), values.end());
  const double h = (double(values.size()) - 1) * std::clamp(q, 0.0, 1.0);
  const auto lo = std::size_t(std::floor(h));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (h - double(lo)) * (values[hi] - values[lo]);
}

ErrorBand error_band(const std::vector<double>& errors_pct) {
  if (errors_pct.empty()) return {};
  return {quantile(errors_pct, kIntervalLowQuantile), quantile(errors_pct, kIntervalHighQuantile),
          int(errors_pct.size())};
}

bool covers(const ErrorBand& band, double low_error_pct, double high_error_pct) {
  return high_error_pct >= band.low_pct && low_error_pct <= band.high_pct;
}

IntervalCoverage leave_one_source_out(const std::vector<CaseResult>& results) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> by_source;
  // Each run's error range: its error, or the lowest and highest over an unsure input's readings.
  std::map<std::string, std::vector<std::pair<double, double>>> ranges;
  std::vector<double> all;
  for (const CaseResult& r : results) {
    if (!r.tokens_error_pct) continue;
    if (!by_source.count(r.source_key)) order.push_back(r.source_key);
    by_source[r.source_key].push_back(*r.tokens_error_pct);
    ranges[r.source_key].push_back(r.tokens_error_range_pct.value_or(std::pair{*r.tokens_error_pct, *r.tokens_error_pct}));
    all.push_back(*r.tokens_error_pct);
  }
  IntervalCoverage out;
  out.band = error_band(all);
  for (const std::string& s : order) {
    std::vector<double> others;
    for (const auto& [name, errors] : by_source)
      if (name != s) others.insert(others.end(), errors.begin(), errors.end());
    if (others.empty()) continue;
    SourceCoverage c{s, error_band(others), int(by_source[s].size()), 0};
    for (const auto& [low, high] : ranges[s]) c.covered += covers(c.band, low, high);
    out.runs += c.runs;
    out.covered += c.covered;
    out.sources.push_back(c);
  }
  return out;
}

}  // namespace fsdpx
