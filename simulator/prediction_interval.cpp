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

IntervalCoverage leave_one_source_out(const std::vector<CaseResult>& results) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> by_source;
  std::vector<double> all;
  for (const CaseResult& r : results) {
    if (!r.tokens_error_pct) continue;
    if (!by_source.count(r.source_key)) order.push_back(r.source_key);
    by_source[r.source_key].push_back(*r.tokens_error_pct);
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
    for (double e : by_source[s]) c.covered += e >= c.band.low_pct && e <= c.band.high_pct;
    out.runs += c.runs;
    out.covered += c.covered;
    out.sources.push_back(c);
  }
  return out;
}

}  // namespace fsdpx
