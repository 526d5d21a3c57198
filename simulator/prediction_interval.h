// simulator/prediction_interval.h — an 80% prediction interval for tokens/s/GPU from the spread of the
// models' signed errors on published runs, and its leave-one-source-out coverage: each source's runs are
// checked against the interval drawn from every other source's errors, so a source the models were not
// developed on is scored as a new one would be (issue 37). Nothing is fitted to the models; the interval
// only states how far off they have been. A run whose source leaves an input unsure (case_uncertainty.h) is
// covered when the band around any of its readings' predictions holds the measurement. Leaves out
// run-to-run variability of the measurements.
#pragma once

#include <string>
#include <vector>

#include "simulator/validate.h"

namespace fsdpx {

// Signed error percentiles: the measurement m lies in the interval when (p - m) / m x 100 is in
// [low_pct, high_pct], i.e. m in [p / (1 + high_pct / 100), p / (1 + low_pct / 100)].
struct ErrorBand {
  double low_pct = 0;   // 10th percentile of the signed errors
  double high_pct = 0;  // 90th percentile
  int runs = 0;         // errors it was drawn from
};
inline constexpr double kIntervalLowQuantile = 0.10, kIntervalHighQuantile = 0.90;

// Quantile q of `values` with linear interpolation between order statistics (Hyndman & Fan 1996,
// definition 7, R's and NumPy's default); throws std::invalid_argument when empty.
double quantile(std::vector<double> values, double q);
ErrorBand error_band(const std::vector<double>& errors_pct);

// Whether a prediction whose error may lie anywhere in [low_error_pct, high_error_pct] (one value, or the
// range over an input the source leaves unsure: validate.h) is covered: the measurement lies in the union
// of the bands around the predictions, i.e. the error range meets the band.
bool covers(const ErrorBand& band, double low_error_pct, double high_error_pct);

struct SourceCoverage {
  std::string source;
  ErrorBand band;    // from every other source's runs
  int runs = 0;      // of this source with a tokens/s error
  int covered = 0;   // whose error lies in band
};
struct IntervalCoverage {
  ErrorBand band;  // from all runs: the interval a new prediction carries
  std::vector<SourceCoverage> sources;
  int runs = 0, covered = 0;  // leave-one-source-out, over every source with another to draw from
};
IntervalCoverage leave_one_source_out(const std::vector<CaseResult>& results);

}  // namespace fsdpx
