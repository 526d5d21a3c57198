// tests/simulator/test_earliest_tree.cpp — the engine's min-tree of instance times against a scan of
// every instance (what the engine did before it): the same earliest time and the same instances at it,
// in the same order, after random updates that include ties, kNever and instance counts off a power of 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "simulator/earliest_tree.h"

namespace fsdpx::engine_detail {
namespace {

TEST_CASE("the earliest tree gives the time and the instances a scan of every instance gives") {
  std::mt19937 rng(12);
  for (const int count : {1, 2, 3, 5, 8, 31, 32, 33, 64, 70}) {
    CAPTURE(count);
    EarliestTree tree(count);
    std::vector<EarliestTree::Time> times(std::size_t(count), EarliestTree::kNever);
    std::vector<int> listed, expected;
    for (int step = 0; step < 2000; ++step) {
      const int i = int(rng() % unsigned(count));
      // Few distinct values, so that several instances often share the earliest time.
      const unsigned pick = rng() % 10;
      const EarliestTree::Time t = pick == 0 ? EarliestTree::kNever : EarliestTree::Time(pick % 4);
      tree.set(i, t);
      times[std::size_t(i)] = t;
      const EarliestTree::Time earliest = *std::min_element(times.begin(), times.end());
      expected.clear();
      for (int k = 0; k < count; ++k)
        if (times[std::size_t(k)] == earliest) expected.push_back(k);
      tree.earliest_instances(listed);
      REQUIRE(tree.earliest() == earliest);
      REQUIRE(tree.get(i) == t);
      REQUIRE(listed == expected);
    }
  }
}

TEST_CASE("an earliest tree of idle instances lists every one of them at kNever") {
  EarliestTree tree(3);
  std::vector<int> listed;
  tree.earliest_instances(listed);
  CHECK(tree.earliest() == EarliestTree::kNever);
  CHECK(listed == std::vector<int>{0, 1, 2});
  tree.set(1, 7);
  tree.earliest_instances(listed);
  CHECK(listed == std::vector<int>{1});
}

}  // namespace
}  // namespace fsdpx::engine_detail
