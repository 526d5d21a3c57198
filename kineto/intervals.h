// kineto/intervals.h — unions and intersections of time intervals in integer nanoseconds, the arithmetic of
// HTA's temporal breakdown (hta/utils/utils.py merge_kernel_intervals: sort by start, merge overlaps).
// Leaves out weighted or per-stream occupancy.
#pragma once

#include <cstdint>
#include <vector>

namespace fsdpx {

struct Interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

// Disjoint, sorted intervals covering exactly the union of `intervals`.
std::vector<Interval> merged(std::vector<Interval> intervals);
// Total length of disjoint intervals.
std::int64_t length_ns(const std::vector<Interval>& disjoint);
// `a` less `b` (both disjoint and sorted): the parts of a's intervals outside every interval of b.
std::vector<Interval> subtracted(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Length of the intersection of two sets of disjoint, sorted intervals.
std::int64_t overlap_ns(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace fsdpx
