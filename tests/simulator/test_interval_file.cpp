// tests/simulator/test_interval_file.cpp — the prediction-interval file: bands drawn from a report, written
// and read back unchanged, strict reading of bad files (one line naming the file and JSON path), and the
// ranges a band gives a prediction, worked by hand.
#include <doctest/doctest.h>

#include <string>

#include "core/errors.h"
#include "simulator/interval_file.h"

namespace fsdpx {
namespace {

ValidationReport report_with(int runs, int memory_runs) {
  ValidationReport r;
  r.file = "cases.json";
  for (int i = 0; i < runs; ++i) {
    CaseResult c;
    c.source_key.assign(1, i % 2 ? 'a' : 'b');
    c.tokens_error_pct = double(i);  // 0 .. runs-1
    if (i < memory_runs) c.memory_error_pct = -double(i);
    r.cases.push_back(c);
  }
  return r;
}

std::string error_of(const nlohmann::json& j) {
  try {
    parse_interval_bands(j, "pi.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("interval file: bands from a report, written and read back") {
  const IntervalBands b = interval_bands_from(report_with(11, 10));
  // 11 errors 0..10: h = 10 q, so the 10th and 90th percentiles are 1 and 9.
  CHECK(b.tokens.low_pct == doctest::Approx(1));
  CHECK(b.tokens.high_pct == doctest::Approx(9));
  CHECK(b.tokens.runs == 11);
  REQUIRE(b.memory);
  CHECK(b.memory->low_pct == doctest::Approx(-8.1));  // 10 errors 0..-9: h = 0.9 / 8.1
  CHECK(b.memory->runs == 10);
  const IntervalBands back = parse_interval_bands(interval_bands_json(b), "pi.json");
  CHECK(back.tokens.high_pct == b.tokens.high_pct);
  CHECK(back.memory->low_pct == b.memory->low_pct);
  CHECK(back.made_from == "cases.json");
  CHECK(back.loso_runs == b.loso_runs);
}

TEST_CASE("interval file: too few runs give no band") {
  CHECK_THROWS_AS(interval_bands_from(report_with(9, 0)), ConfigError);
  CHECK_FALSE(interval_bands_from(report_with(12, 9)).memory);  // memory needs 10 runs too
}

TEST_CASE("interval file: bad files are one-line errors naming the file and path") {
  const nlohmann::json good = interval_bands_json(interval_bands_from(report_with(11, 0)));
  CHECK(error_of(good).empty());
  nlohmann::json j = good;
  j["extra"] = 1;
  CHECK(error_of(j).find("pi.json") != std::string::npos);
  j = good;
  j["tokens_per_s_per_gpu"]["low_error_pct"] = 50;  // above high (9)
  CHECK(error_of(j).find("/tokens_per_s_per_gpu/low_error_pct") != std::string::npos);
  j = good;
  j["quantiles"] = {0.05, 0.95};
  CHECK(error_of(j).find("/quantiles") != std::string::npos);
  j = good;
  j["tokens_per_s_per_gpu"]["low_error_pct"] = -100;  // a measurement of infinite speed
  CHECK(error_of(j).find("low_error_pct") != std::string::npos);
}

TEST_CASE("interval file: the measurement's range from a predicted value") {
  const ErrorBand band{-20, 25, 10};
  // Predicted 1000 tokens/s: measured m with (1000 - m) / m in [-20%, +25%] -> m in [800, 1250].
  const ValueRange tokens = measured_range(1000, band);
  CHECK(tokens.low == doctest::Approx(800));
  CHECK(tokens.high == doctest::Approx(1250));
  // Predicted step 2 s: tokens over-predicted by e means the step takes (1 + e) x 2 s.
  const ValueRange step = measured_time_range(2, band);
  CHECK(step.low == doctest::Approx(1.6));
  CHECK(step.high == doctest::Approx(2.5));
}

}  // namespace
}  // namespace fsdpx
