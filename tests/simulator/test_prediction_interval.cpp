// tests/simulator/test_prediction_interval.cpp — percentiles by Hyndman & Fan's definition 7 against
// values worked by hand, and leave-one-source-out coverage on hand-made errors: a source is scored against
// the band of the others only, and a source alone is not scored.
#include <doctest/doctest.h>

#include <stdexcept>

#include "simulator/prediction_interval.h"

namespace fsdpx {
namespace {

CaseResult result(const std::string& source, std::optional<double> error_pct) {
  CaseResult r;
  r.source_key = source;
  r.tokens_error_pct = error_pct;
  return r;
}

TEST_CASE("quantile: linear interpolation between order statistics") {
  // h = (n - 1) q: 0.1 x 4 = 0.4 -> 1 + 0.4 x (2 - 1); 0.9 x 4 = 3.6 -> 4 + 0.6 x (10 - 4).
  CHECK(quantile({10, 1, 4, 2, 3}, 0.1) == doctest::Approx(1.4));
  CHECK(quantile({10, 1, 4, 2, 3}, 0.9) == doctest::Approx(7.6));
  CHECK(quantile({5}, 0.9) == 5);
  CHECK_THROWS_AS(quantile({}, 0.5), std::invalid_argument);
}

TEST_CASE("leave one source out: each source against the other sources' band") {
  std::vector<CaseResult> rs;
  for (double e : {-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}) rs.push_back(result("a", e));
  rs.push_back(result("b", 20.0));  // far outside a's band
  rs.push_back(result("b", 0.0));   // inside it
  rs.push_back(result("b", std::nullopt));  // no measured tokens/s: not counted
  const IntervalCoverage c = leave_one_source_out(rs);
  REQUIRE(c.sources.size() == 2);
  CHECK(c.band.runs == 13);
  const SourceCoverage& b = c.sources[1];
  CHECK(b.source == "b");
  CHECK(b.runs == 2);
  CHECK(b.covered == 1);
  // a's band is drawn from b's two errors only: 0 + 0.1 x 20 = 2 to 0 + 0.9 x 20 = 18.
  const SourceCoverage& a = c.sources[0];
  CHECK(a.band.low_pct == doctest::Approx(2.0));
  CHECK(a.band.high_pct == doctest::Approx(18.0));
  CHECK(a.covered == 7);  // 2 ... 8
  CHECK(c.runs == 13);
  CHECK(c.covered == 8);
  // One source alone has no other to be scored against.
  const IntervalCoverage alone = leave_one_source_out({result("a", 1.0), result("a", 2.0)});
  CHECK(alone.sources.empty());
  CHECK(alone.runs == 0);
  CHECK(alone.band.runs == 2);
}

TEST_CASE("leave one source out: a run with an unsure input is covered when its error range meets the band") {
  std::vector<CaseResult> rs;
  for (double e : {-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}) rs.push_back(result("a", e));  // band -1..7
  CaseResult wide = result("b", 20.0);
  wide.tokens_error_range_pct = std::pair{6.5, 30.0};  // a reading's prediction lands inside the band
  CaseResult narrow = result("b", 20.0);
  narrow.tokens_error_range_pct = std::pair{15.0, 25.0};  // no reading does
  rs.push_back(wide);
  rs.push_back(narrow);
  const IntervalCoverage c = leave_one_source_out(rs);
  REQUIRE(c.sources.size() == 2);
  CHECK(c.sources[1].band.low_pct == doctest::Approx(-1.0));
  CHECK(c.sources[1].band.high_pct == doctest::Approx(7.0));
  CHECK(c.sources[1].covered == 1);
  // The band itself is drawn from the runs' own errors, not from their ranges.
  CHECK(c.band.runs == 13);
  CHECK(covers(ErrorBand{-1, 7, 1}, -3, -1));
  CHECK_FALSE(covers(ErrorBand{-1, 7, 1}, -3, -1.01));
}

}  // namespace
}  // namespace fsdpx
