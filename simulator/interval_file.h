// simulator/interval_file.h — the 80% prediction interval that simulate, plan and estimate print beside a
// prediction (issue 37). It is the 10th-90th percentile band of the models' signed errors on the published
// runs of held-back sources (tests/data/validation/ground_truth_runs.json), written by
// `fsdpx validate FILE --write-interval PATH` into configs/validation/prediction_interval.json and read back
// strictly; a test regenerates it, so the shipped band is always the current models' band. It states how far
// off the models have been on sources they were not developed on; it leaves out the run-to-run variability of
// the user's own cluster and says nothing of fsdpx's own CUDA executor, which has no measured runs yet.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "simulator/prediction_interval.h"
#include "simulator/validate.h"

namespace fsdpx {

inline constexpr int kMinRunsForBand = 10;  // fewer errors than this give no band (a decile needs 10)

struct IntervalBands {
  std::string made_from;             // the case file the errors came from
  ErrorBand tokens;                  // signed tokens/s/GPU errors
  std::optional<ErrorBand> memory;   // signed peak-memory errors, where the file has at least kMinRunsForBand
  int loso_runs = 0, loso_covered = 0;  // leave-one-source-out coverage of the tokens band
};

// Bands drawn from every scored case of a validation report; throws ConfigError when fewer than
// kMinRunsForBand cases have a tokens/s error.
IntervalBands interval_bands_from(const ValidationReport& report);
nlohmann::json interval_bands_json(const IntervalBands& bands);
// Strict reader (unknown keys, wrong types and low > high are errors naming the file and JSON path).
IntervalBands parse_interval_bands(const nlohmann::json& j, const std::string& file);
// configs/validation/prediction_interval.json, read once; nullopt when no config directory has it.
const std::optional<IntervalBands>& shipped_interval_bands();
// The shipped bands where they apply: a plan predicted for a published stack's costs (torchtitan,
// llm-foundry, Megatron) on a GPU. nullptr for fsdpx's own executor, which has no measured runs, for the
// CPU host, and when no bands are shipped.
const IntervalBands* interval_bands_for(const Plan& plan);

// The measurement m of a prediction p lies in the band when (p - m) / m x 100 is in [low_pct, high_pct].
struct ValueRange {
  double low = 0, high = 0;
};
ValueRange measured_range(double predicted, const ErrorBand& band);        // tokens/s, memory: m = p / (1 + e)
ValueRange measured_time_range(double predicted_s, const ErrorBand& band);  // step time: t = t_p x (1 + e)

}  // namespace fsdpx
