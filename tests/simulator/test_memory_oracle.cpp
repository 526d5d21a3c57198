// tests/simulator/test_memory_oracle.cpp — fsdpx's simulated peak allocated bytes against PyTorch's FSDP2
// memory tracker (tests/data/fsdp2_memory/fixtures.json, made by tools/fsdp2_memory_oracle.py on fake
// tensors): at least 30 configurations, median absolute error <= 3%, none under-predicted by more than
// 5% (issue 31's targets); the fixtures' self-consistency; and the fixture
// reader's strictness.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.h"
#include "simulator/memory_oracle.h"

namespace fsdpx {
namespace {

const std::string kFixtures = std::string(FSDPX_TEST_DATA_DIR) + "/fsdp2_memory/fixtures.json";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

// Issue 31's bounds (docs/validation.md, "Peak memory against PyTorch's FSDP2 memory tracker"): median
// |error| <= 3%, no configuration under-predicted by more than 5%.
TEST_CASE("simulated peak allocated bytes agree with FSDP2's memory tracker") {
  const std::vector<OracleCase> cases = load_oracle_cases(kFixtures);
  const std::vector<OracleComparison> rows = compare_with_oracle(cases);
  std::vector<double> abs_errors;
  double worst_under = 0;
  std::string worst_id;
  for (const OracleComparison& r : rows) {
    std::printf("%-45s tracker %7.2f GiB  fsdpx %7.2f GiB  %+6.1f%%  (%s | %s)\n", r.id.c_str(),
                r.measured_bytes / (1 << 30), r.predicted_bytes / (1 << 30), 100 * r.error(),
                r.measured_peak_at.c_str(), r.predicted_peak_op.c_str());
    std::printf("    fsdpx at its peak:");
    for (int k = 0; k < kMemCategoryCount; ++k)
      std::printf(" %s %.2f", mem_category_name(MemCategory(k)), r.predicted_by_category[std::size_t(k)] / (1 << 30));
    std::printf("\n");
    abs_errors.push_back(std::fabs(r.error()));
    if (r.error() < worst_under) worst_under = r.error(), worst_id = r.id;
  }
  const double med = median(abs_errors);
  std::printf("median |error| %.2f%%, worst under-prediction %.2f%% (%s)\n", 100 * med, 100 * worst_under,
              worst_id.c_str());
  CHECK(cases.size() >= 30);
  CHECK(med <= 0.03);
  CHECK_MESSAGE(worst_under >= -0.05, worst_id);
}

TEST_CASE("the fixtures cover the issue's grid and every one simulates") {
  const std::vector<OracleCase> cases = load_oracle_cases(kFixtures);
  CHECK(cases.size() >= 30);
  int hsdp = 0, kept = 0;
  for (const OracleCase& c : cases) {
    hsdp += c.plan.parallelism.dp_replicate > 1;
    kept += c.plan.units.front().reshard_after_forward == 0;
    CHECK(c.measured.forward_backward_peak_bytes > c.measured.step_start_bytes);
  }
  CHECK(hsdp >= 3);
  CHECK(kept >= 3);
  for (const OracleComparison& r : compare_with_oracle(cases)) CHECK(r.predicted_bytes > 0);
}

TEST_CASE("the fixture reader names the file and path of bad input") {
  const std::string bad = std::string(FSDPX_TEST_DATA_DIR) + "/fsdp2_memory/bad_phase.json";
  try {
    load_oracle_cases(bad);
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("bad_phase.json") != std::string::npos);
    CHECK(what.find("/configurations/0/tracker/forward_backward_peak_at/phase") != std::string::npos);
  }
}

}  // namespace fsdpx
