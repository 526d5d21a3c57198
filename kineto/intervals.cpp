// kineto/intervals.cpp — interval union (one pass after sorting) and the two-pointer intersection of two
// disjoint sorted sets. Leaves out open/closed distinctions: touching intervals merge, as in HTA.
#include "kineto/intervals.h"

#include <algorithm>

namespace fsdpx {

std::vector<Interval> merged(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (!out.empty() && i.start_ns <= out.back().end_ns) out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    else out.push_back(i);
  }
  return out;
}

std::int64_t length_ns(const std::vector<Interval>& disjoint) {
  std::int64_t total = 0;
  for (const Interval& i : disjoint) total += i.end_ns - i.start_ns;
  return total;
}

std::vector<Interval> subtracted(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (Interval i : a) {
    while (j < b.size() && b[j].end_ns <= i.start_ns) ++j;
    for (std::size_t k = j; k < b.size() && b[k].start_ns < i.end_ns; ++k) {
      if (b[k].start_ns > i.start_ns) out.push_back({i.start_ns, b[k].start_ns});
      i.start_ns = std::max(i.start_ns, b[k].end_ns);
    }
    if (i.end_ns > i.start_ns) out.push_back(i);
  }
  return out;
}

std::int64_t overlap_ns(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start_ns, b[j].start_ns), hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) total += hi - lo;
    (a[i].end_ns < b[j].end_ns) ? ++i : ++j;
  }
  return total;
}

}  // namespace fsdpx
