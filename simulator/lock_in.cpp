// simulator/lock_in.cpp — the gaps between adjacent stages per micro-batch and their extrapolation to the
// transfer floor (lock_in.h).
#include "simulator/lock_in.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fsdpx {

namespace {

// Per virtual stage and micro-batch: first start and last end of its compute ops of one direction (-1:
// none). Without interleaving a virtual stage is a pipeline rank.
struct Spans {
  std::vector<std::vector<TimeNs>> start, end;
};

std::size_t virtual_stages(const StepProgram& p) {
  int most = 0;
  for (const RoleProgram& role : p.roles)
    for (const Op& op : role.ops) most = std::max(most, op.stage + 1);
  return std::size_t(most);
}

Spans spans(const StepProgram& p, const EngineResult& e, std::int64_t micro_batches, bool forward) {
  const std::size_t stages = virtual_stages(p), mbs = std::size_t(micro_batches);
  Spans s{std::vector<std::vector<TimeNs>>(stages, std::vector<TimeNs>(mbs, -1)),
          std::vector<std::vector<TimeNs>>(stages, std::vector<TimeNs>(mbs, -1))};
  for (const OpTiming& o : e.ops) {
    if (o.rank != 0) continue;
    const Op& op = p.roles[std::size_t(o.role)].ops[std::size_t(o.op)];
    const bool is_forward = op.kind == OpKind::forward;
    const bool is_backward = op.kind == OpKind::backward || op.kind == OpKind::backward_input;
    if (op.stream != StreamKind::compute || op.micro_batch < 0 || std::size_t(op.micro_batch) >= mbs ||
        op.stage < 0 || !(forward ? is_forward : is_backward))
      continue;
    TimeNs& first = s.start[std::size_t(op.stage)][std::size_t(op.micro_batch)];
    TimeNs& last = s.end[std::size_t(op.stage)][std::size_t(op.micro_batch)];
    if (first < 0 || o.start_ns < first) first = o.start_ns;
    last = std::max(last, o.end_ns);
  }
  return s;
}

// Gap per micro-batch between a stage's sender and its receiver: the receiver's first start minus the
// sender's last end (forward: stage r to r + 1; backward: r + 1 to r). -1 where either is missing.
std::vector<TimeNs> gaps(const Spans& s, std::size_t from, std::size_t to) {
  std::vector<TimeNs> g(s.start[from].size(), -1);
  for (std::size_t k = 0; k < g.size(); ++k)
    if (s.end[from][k] >= 0 && s.start[to][k] >= 0) g[k] = s.start[to][k] - s.end[from][k];
  return g;
}

// A gap that shrinks by the same amount per period of d micro-batches (to 2 ns plus 0.1%: durations round
// to whole ns) over the micro-batches first, first + d, ..., last, extrapolated to `floor_ns`: the
// micro-batch where it gets there.
std::optional<std::int64_t> reaches_floor(const std::vector<TimeNs>& g, std::int64_t first, std::int64_t last,
                                          std::int64_t d, TimeNs floor_ns) {
  TimeNs least = std::numeric_limits<TimeNs>::max(), most = 0;
  for (std::int64_t k = first + d; k <= last; k += d) {
    if (g[std::size_t(k - d)] < 0 || g[std::size_t(k)] < 0) return std::nullopt;
    const TimeNs fall = g[std::size_t(k - d)] - g[std::size_t(k)];
    least = std::min(least, fall), most = std::max(most, fall);
  }
  if (least <= 0 || double(most - least) > 2.0 + 1e-3 * double(least)) return std::nullopt;
  const TimeNs left_ns = g[std::size_t(last)] - floor_ns;
  if (left_ns <= 0) return std::nullopt;
  const double fall_ns = double(g[std::size_t(first)] - g[std::size_t(last)]) / double((last - first) / d);
  return last + d * std::int64_t(std::ceil(double(left_ns) / fall_ns));
}

// Every gap between adjacent virtual stages in one direction, per micro-batch.
std::vector<std::vector<TimeNs>> all_gaps(const StepProgram& program, const EngineResult& engine,
                                          std::int64_t micro_batches, bool forward) {
  const Spans s = spans(program, engine, micro_batches, forward);
  std::vector<std::vector<TimeNs>> all;
  for (std::size_t v = 0; v + 1 < s.start.size(); ++v) all.push_back(forward ? gaps(s, v, v + 1) : gaps(s, v + 1, v));
  return all;
}

}  // namespace

std::optional<std::int64_t> predict_lock_in(const StepProgram& program, const EngineResult& engine,
                                            std::int64_t micro_batches, std::int64_t d) {
  const std::int64_t pp = std::int64_t(program.roles.size());
  // Four periods past the warm-up (pp) and clear of the cool-down (the last 2 pp).
  const std::int64_t last = micro_batches - 2 * pp - 1, first = last - 3 * d;
  if (pp < 2 || d < 1 || first < pp) return std::nullopt;
  std::optional<std::int64_t> lock_in;
  for (const bool forward : {true, false}) {
    const std::vector<std::vector<TimeNs>> all = all_gaps(program, engine, micro_batches, forward);
    TimeNs floor_ns = std::numeric_limits<TimeNs>::max();  // the transfer alone: the smallest gap seen
    for (const auto& g : all)
      for (const TimeNs x : g)
        if (x >= 0) floor_ns = std::min(floor_ns, x);
    for (const auto& g : all)
      if (const auto k = reaches_floor(g, first, last, d, floor_ns)) lock_in = std::max(lock_in.value_or(0), *k);
  }
  return lock_in;
}

double pace_spread(const StepProgram& program, const EngineResult& engine, std::int64_t micro_batches,
                   double pace_ns, std::int64_t d) {
  const std::int64_t pp = std::int64_t(program.roles.size());
  const std::int64_t last = micro_batches - 2 * pp - 1;
  if (pp < 2 || d < 1 || pace_ns <= 0) return std::numeric_limits<double>::infinity();
  // The later half of the micro-batches past the warm-up, in pairs of periods (a stage that alternates two
  // periods keeps its mean pace over a pair: over an odd count the 405B pp 32 plan's stages read 9e-5 off).
  const std::int64_t pairs = (last - pp) / (4 * d);
  if (pairs < 2) return std::numeric_limits<double>::infinity();
  const std::int64_t first = last - 2 * d * pairs;
  double most = 0;
  for (const bool forward : {true, false}) {
    const Spans s = spans(program, engine, micro_batches, forward);
    for (const auto& start : s.start) {
      const TimeNs a = start[std::size_t(first)], b = start[std::size_t(last)];
      if (a < 0 || b < 0) return std::numeric_limits<double>::infinity();
      const double own_ns = double(b - a) / double(last - first);  // per micro-batch
      most = std::max(most, std::abs(own_ns - pace_ns) / pace_ns);
    }
  }
  return most;
}

}  // namespace fsdpx
