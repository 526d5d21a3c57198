// simulator/interval_file.cpp — the shipped prediction-interval file: drawn from a validation report,
// written as JSON, read back strictly (interval_file.h).
#include "simulator/interval_file.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"

namespace fsdpx {

namespace {

constexpr const char* kFormat = "fsdpx-prediction-interval/1";

nlohmann::json band_json(const ErrorBand& b) {
  return {{"low_error_pct", b.low_pct}, {"high_error_pct", b.high_pct}, {"runs", b.runs}};
}

ErrorBand parse_band(JsonObject o) {
  ErrorBand b;
  b.low_pct = o.number_in("low_error_pct", {-99, 1000});
  b.high_pct = o.number_in("high_error_pct", {-99, 1000});
  b.runs = int(o.integer_in("runs", {kMinRunsForBand, 1000000}));
  o.finish();
  if (b.low_pct > b.high_pct) o.fail("low_error_pct", "is above high_error_pct");
  return b;
}

}  // namespace

IntervalBands interval_bands_from(const ValidationReport& report) {
  std::vector<double> tokens, memory;
  for (const CaseResult& c : report.cases) {
    if (c.tokens_error_pct) tokens.push_back(*c.tokens_error_pct);
    if (c.memory_error_pct) memory.push_back(*c.memory_error_pct);
  }
  if (int(tokens.size()) < kMinRunsForBand)
    throw ConfigError(fmt::format("{}: {} runs with a tokens/s error, fewer than the {} an 80% interval needs",
                                  report.file, tokens.size(), kMinRunsForBand));
  IntervalBands out;
  out.made_from = report.file;
  out.tokens = error_band(tokens);
  if (int(memory.size()) >= kMinRunsForBand) out.memory = error_band(memory);
  const IntervalCoverage loso = leave_one_source_out(report.cases);
  out.loso_runs = loso.runs;
  out.loso_covered = loso.covered;
  return out;
}

nlohmann::json interval_bands_json(const IntervalBands& bands) {
  nlohmann::json j = {
      {"format", kFormat},
      {"what", "10th-90th percentile of the signed errors (predicted - measured) / measured x 100 of fsdpx's "
               "predictions on published runs; written by `fsdpx validate FILE --write-interval PATH`"},
      {"made_from", bands.made_from},
      {"quantiles", {kIntervalLowQuantile, kIntervalHighQuantile}},
      {"tokens_per_s_per_gpu", band_json(bands.tokens)},
      {"peak_memory", bands.memory ? band_json(*bands.memory) : nlohmann::json(nullptr)},
      {"leave_one_source_out", {{"runs", bands.loso_runs}, {"covered", bands.loso_covered}}}};
  return j;
}

IntervalBands parse_interval_bands(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  if (o.string("format") != kFormat) o.fail("format", fmt::format("must be \"{}\"", kFormat));
  o.ignore("what");
  IntervalBands b;
  b.made_from = o.string("made_from");
  const auto quantiles = o.array("quantiles");
  if (quantiles.size() != 2 || *quantiles[0].first != kIntervalLowQuantile ||
      *quantiles[1].first != kIntervalHighQuantile)
    o.fail("quantiles", fmt::format("must be [{}, {}], the quantiles fsdpx prints", kIntervalLowQuantile,
                                    kIntervalHighQuantile));
  b.tokens = parse_band(o.object("tokens_per_s_per_gpu"));
  if (o.has("peak_memory") && !o.raw("peak_memory").is_null()) b.memory = parse_band(o.object("peak_memory"));
  JsonObject loso = o.object("leave_one_source_out");
  b.loso_runs = int(loso.integer_in("runs", {0, 1000000}));
  b.loso_covered = int(loso.integer_in("covered", {0, b.loso_runs}));
  loso.finish();
  o.finish();
  return b;
}

const std::optional<IntervalBands>& shipped_interval_bands() {
  static const std::optional<IntervalBands> bands = []() -> std::optional<IntervalBands> {
    const auto names = list_configs("validation");
    if (std::find(names.begin(), names.end(), "prediction_interval") == names.end()) return std::nullopt;
    const std::string path = resolve_config("validation", "prediction_interval");
    return parse_interval_bands(load_json_file(path), path);
  }();
  return bands;
}

const IntervalBands* interval_bands_for(const Plan& plan) {
  if (plan.framework == Framework::fsdpx || plan.cluster.gpu.name == "cpu-host") return nullptr;
  const auto& bands = shipped_interval_bands();
  return bands ? &*bands : nullptr;
}

ValueRange measured_range(double predicted, const ErrorBand& band) {
  return {predicted / (1 + band.high_pct / 100), predicted / (1 + band.low_pct / 100)};
}

ValueRange measured_time_range(double predicted_s, const ErrorBand& band) {
  return {predicted_s * (1 + band.low_pct / 100), predicted_s * (1 + band.high_pct / 100)};
}

}  // namespace fsdpx
