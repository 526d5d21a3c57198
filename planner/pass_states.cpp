// planner/pass_states.cpp — the held rows of pass_states.h: one walk per rank, the distinct rows, the
// maximal ones, memoized.
//
// Why dropping a dominated row is exact: the bound weighs a row as Σ_c held[c]·saved[c] +
// held[vpp+c]·weight_pass[c] (memory_bound.cpp held_peak) with bytes >= 0, in a fixed order, and keeps the
// largest. If row r <= row s componentwise, every product of r is <= that of s (x >= 0), and IEEE rounding
// is monotone, so every partial sum of r is <= that of s: r's total never exceeds s's, and the largest
// over the maximal rows is the largest over all rows, to the bit. A non-empty set keeps at least one row.
#include "planner/pass_states.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <span>
#include <tuple>

namespace fsdpx {

namespace {

// The distinct rows of `rows` (`width` counts each), in lexicographic order.
HeldRows distinct_rows(const std::vector<int>& rows, std::size_t width) {
  std::vector<std::size_t> order(rows.size() / width);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i * width;
  auto row = [&](std::size_t at) { return std::span<const int>(rows.data() + at, width); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::ranges::lexicographical_compare(row(a), row(b));
  });
  HeldRows states;
  for (std::size_t at : order)
    if (states.empty() || !std::ranges::equal(states.back(), row(at)))
      states.emplace_back(row(at).begin(), row(at).end());
  return states;
}

bool at_most(const std::vector<int>& r, const std::vector<int>& s) {
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i] > s[i]) return false;
  return true;
}

}  // namespace

// At each of the rank's forwards and at the start of ZB's B and W passes; at the start of each chunk's
// first whole backward pass; at the start of its later ones (before a pass frees anything).
std::array<HeldRows, 3> walk_held_rows(const std::vector<PipeAction>& actions, int vpp) {
  std::vector<bool> seen(std::size_t(vpp), false);  // per chunk: a whole backward pass ran
  const std::size_t width = std::size_t(2 * vpp);
  std::vector<int> held(width, 0);          // [saved per chunk..., weight-pass per chunk...]
  std::array<std::vector<int>, 3> rows;     // per PassMoment, `width` counts each
  // The steady phase repeats one state: keep a row only when it differs from the last one kept.
  auto keep = [&](PassMoment m) {
    std::vector<int>& r = rows[std::size_t(m)];
    if (r.empty() || !std::equal(held.begin(), held.end(), r.end() - long(width))) r.insert(r.end(), held.begin(), held.end());
  };
  for (const PipeAction& a : actions) {
    const auto c = std::size_t(a.chunk), w = std::size_t(vpp) + c;
    switch (a.pass) {
      case PipePass::forward: ++held[c], keep(PassMoment::forward); break;
      case PipePass::backward:
        keep(seen[c] ? PassMoment::later_backward : PassMoment::first_backward);
        seen[c] = true;
        --held[c];
        break;
      // ZB's passes, at their start: B's micro-batch still saved, and all of W's weight-pass bytes kept
      // (one micro-batch's W may follow all of its B passes, as with a single micro-batch).
      case PipePass::backward_input: keep(PassMoment::forward), --held[c], ++held[w]; break;
      case PipePass::backward_weight: keep(PassMoment::forward), --held[w]; break;
    }
  }
  return {distinct_rows(rows[0], width), distinct_rows(rows[1], width), distinct_rows(rows[2], width)};
}

HeldRows maximal_rows(const HeldRows& rows) {
  HeldRows kept;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < rows.size() && !dominated; ++j)
      dominated = j != i && rows[j] != rows[i] && at_most(rows[i], rows[j]);
    if (!dominated) kept.push_back(rows[i]);
  }
  return kept;
}

PassStates compute_pass_states(PipelineSchedule schedule, int pp, int vpp, int walked) {
  PassStates out;
  for (int rank = 0; rank < pp; ++rank) {
    std::array<HeldRows, 3> rows = walk_held_rows(pipeline_actions(schedule, pp, vpp, rank, walked), vpp);
    for (HeldRows& r : rows) r = maximal_rows(r);
    out.push_back(std::move(rows));
  }
  return out;
}

std::shared_ptr<const PassStates> pipeline_pass_states(PipelineSchedule schedule, int pp, int vpp, int walked) {
  using Key = std::tuple<PipelineSchedule, int, int, int>;
  // Process-wide: the planner's shapes, its "more GPUs" suggestions and the Python module's sweeps repeat
  // the same few keys. Cleared when large (a sweep over many pp, vpp and micro-batch counts); a model
  // keeps its own pointer.
  constexpr std::size_t kMaxEntries = 4096;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const PassStates>> memo;
  const Key key{schedule, pp, vpp, walked};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto states = std::make_shared<const PassStates>(compute_pass_states(schedule, pp, vpp, walked));
  const std::lock_guard<std::mutex> lock(mutex);
  if (memo.size() >= kMaxEntries) memo.clear();
  return memo.emplace(key, std::move(states)).first->second;  // another thread's equal entry wins
}

}  // namespace fsdpx
