// tests/planner/test_pass_states.cpp — the memory bound's held rows (planner/pass_states.h): for every
// walked schedule, pp <= 16 and vpp <= 4, the memoized states are the direct ones, and the maximal rows
// lose nothing: each is a row of the walk, every row of the walk is at most one of them componentwise, and
// the largest weighted total over random non-negative bytes is the same to the bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "planner/pass_states.h"

namespace fsdpx {

namespace {

bool at_most(const std::vector<int>& r, const std::vector<int>& s) {
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i] > s[i]) return false;
  return true;
}

// held_peak's sum (memory_bound.cpp): Σ_c held[c]·saved[c] + held[vpp+c]·weight[c], the most over rows.
double largest(const HeldRows& rows, const std::vector<double>& saved, const std::vector<double>& weight) {
  double peak = 0;
  for (const std::vector<int>& held : rows) {
    double live = 0;
    for (std::size_t c = 0; c < saved.size(); ++c) live += held[c] * saved[c] + held[saved.size() + c] * weight[c];
    peak = std::max(peak, live);
  }
  return peak;
}

struct Key {
  PipelineSchedule schedule;
  int pp, vpp, walked;
};

// Micro-batch counts around the warm-up and the walk's cap (4 pp vpp + one period), valid for the schedule.
std::vector<Key> keys() {
  std::vector<Key> out;
  for (int pp = 2; pp <= 16; ++pp)
    for (PipelineSchedule s : {PipelineSchedule::one_f_one_b, PipelineSchedule::zero_bubble,
                               PipelineSchedule::interleaved_1f1b})
      for (int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1; vpp <= (s == PipelineSchedule::interleaved_1f1b ? 4 : 1); ++vpp) {
        const int d = s == PipelineSchedule::interleaved_1f1b ? pp : 1;
        for (int m : {1, 2, pp - 1, pp, pp + 1, 2 * pp + 1, 4 * pp * vpp, 4 * pp * vpp + d})
          if (m >= 1 && m % d == 0) out.push_back({s, pp, vpp, m});
      }
  return out;
}

}  // namespace

TEST_CASE("memoized pass states are the direct ones, and the maximal rows lose no peak") {
  std::mt19937 rng(36);
  std::uniform_real_distribution<double> bytes(0.0, 1e9);
  std::size_t checked = 0, walk_rows = 0, kept_rows = 0;
  for (const Key& k : keys()) {
    CAPTURE(pipeline_schedule_name(k.schedule));
    CAPTURE(k.pp);
    CAPTURE(k.vpp);
    CAPTURE(k.walked);
    const auto memo = pipeline_pass_states(k.schedule, k.pp, k.vpp, k.walked);
    REQUIRE(memo != nullptr);
    CHECK(pipeline_pass_states(k.schedule, k.pp, k.vpp, k.walked) == memo);  // the same entry again
    CHECK(*memo == compute_pass_states(k.schedule, k.pp, k.vpp, k.walked));
    REQUIRE(memo->size() == std::size_t(k.pp));
    for (int rank = 0; rank < k.pp; ++rank) {
      const auto all = walk_held_rows(pipeline_actions(k.schedule, k.pp, k.vpp, rank, k.walked), k.vpp);
      for (std::size_t m = 0; m < 3; ++m) {
        const HeldRows& kept = (*memo)[std::size_t(rank)][m];
        CHECK(kept.empty() == all[m].empty());
        for (const auto& row : kept) CHECK(std::find(all[m].begin(), all[m].end(), row) != all[m].end());
        for (const auto& row : all[m])
          CHECK(std::any_of(kept.begin(), kept.end(), [&](const auto& r) { return at_most(row, r); }));
        std::vector<double> saved(std::size_t(k.vpp)), weight(std::size_t(k.vpp));
        for (double& x : saved) x = bytes(rng);
        for (double& x : weight) x = bytes(rng);
        CHECK(largest(kept, saved, weight) == largest(all[m], saved, weight));
        walk_rows += all[m].size(), kept_rows += kept.size(), ++checked;
      }
    }
  }
  MESSAGE(checked << " (key, rank, moment) row sets: " << walk_rows << " distinct rows walked, " << kept_rows
                  << " maximal kept");
  CHECK(kept_rows < walk_rows);  // the filter drops rows (1F1B keeps one per moment)
}

TEST_CASE("maximal_rows keeps the rows no other row dominates") {
  const HeldRows rows{{0, 1}, {1, 0}, {1, 1}, {2, 0}, {0, 2}};
  CHECK(maximal_rows(rows) == HeldRows{{1, 1}, {2, 0}, {0, 2}});
  CHECK(maximal_rows({}).empty());
  CHECK(maximal_rows({{3, 3}}) == HeldRows{{3, 3}});
}

}  // namespace fsdpx
