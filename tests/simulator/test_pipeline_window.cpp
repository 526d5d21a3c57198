// tests/simulator/test_pipeline_window.cpp — simulator/pipeline_window.h's window check against the one it
// replaced (every op of every role scanned in program order, every memory sample; steady_state_pipeline.cpp
// before issue 36's branch deep18, kept here as the reference): the same answer, and for a window that
// recurs the same ops, busy time and floor to the bit, for every window the probes' search tries (anchored on
// the first stage's forwards, spans of one and two periods) and windows shifted off the anchors by a
// nanosecond, on probes of every schedule, with windows that recur and windows that do not; the ends'
// condition (ends_recur) holds for every window that recurs and rejects most of the others.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/pipeline_window.h"
#include "simulator/steady_state_pipeline.h"
#include "tests/support/pipelined_plan.h"

namespace fsdpx {

namespace {

bool reference_in_window(TimeNs start, TimeNs end, TimeNs from, TimeNs to) {
  return (start >= from && start < to) || (start < from && end > from);
}

bool reference_ops_recur(const PipelineProbe& pr, int role, TimeNs t, TimeNs period, Window& w) {
  const auto& start = pr.start[std::size_t(role)];
  const auto& end = pr.end[std::size_t(role)];
  const RoleProgram& rp = pr.program.roles[std::size_t(role)];
  int in_first = 0, in_second = 0;
  for (int i = 0; i < int(rp.ops.size()); ++i) {
    const auto u = std::size_t(i);
    in_second += reference_in_window(start[u], end[u], t + period, t + 2 * period);
    if (!reference_in_window(start[u], end[u], t, t + period)) continue;
    const int s = pr.shift[std::size_t(role)][u];
    if (s < 0 || start[std::size_t(s)] != start[u] + period || end[std::size_t(s)] != end[u] + period ||
        !same_shifted_op(pr, role, i, s))
      return false;
    ++in_first;
    if (start[u] < t) continue;
    ++w.ops[std::size_t(role)];
    if (rp.ops[u].stream != StreamKind::compute) continue;
    w.busy_ns[std::size_t(role)] += end[u] - start[u];
    w.floor_s[std::size_t(role)] += rp.ops[u].duration_s;
  }
  return in_first == in_second;
}

bool reference_memory_recurs(const PipelineProbe& pr, int role, TimeNs t, TimeNs period) {
  std::vector<const MemorySample*> a, b;
  for (const MemorySample* s : pr.samples[std::size_t(role)]) {
    if (s->at_ns >= t && s->at_ns < t + period) a.push_back(s);
    if (s->at_ns >= t + period && s->at_ns < t + 2 * period) b.push_back(s);
  }
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (b[i]->at_ns != a[i]->at_ns + period) return false;
    for (std::size_t c = 0; c < a[i]->by_category.size(); ++c) {
      const double x = a[i]->by_category[c], y = b[i]->by_category[c];
      if (std::abs(x - y) > 1e-9 * std::max({1.0, std::abs(x), std::abs(y)})) return false;
    }
  }
  return true;
}

std::optional<Window> reference_check_window(const PipelineProbe& pr, TimeNs t, TimeNs period) {
  const std::size_t roles = pr.program.roles.size();
  Window w{t, period, std::vector<int>(roles, 0), std::vector<TimeNs>(roles, 0), std::vector<double>(roles, 0)};
  for (int r = 0; r < int(roles); ++r)
    if (!reference_ops_recur(pr, r, t, period, w) || !reference_memory_recurs(pr, r, t, period)) return std::nullopt;
  return w;
}

Parallelism shape(int pp, int dp_shard, int tp) {
  Parallelism p;
  p.pp = pp, p.dp_shard = dp_shard, p.tp = tp, p.sequence_parallel = tp > 1;
  return p;
}

struct Counts {
  int tried = 0, recurring = 0, rejected_by_ends = 0;
};

// Every window anchored on role 0's first forwards of micro-batches k and k + d, and the same shifted by
// +-1 ns, checked both ways.
void compare_windows(const Plan& plan, std::int64_t micro_batches, Counts& counts) {
  StepProgram program = lower(with_micro_batches(plan, micro_batches));
  time_program(program, plan);
  const EngineResult engine = run_engine(program, EngineOptions{});
  PipelineProbe pr = make_pipeline_probe(program, engine);  // the reference's, its shift built at once
  PipelineProbe lazy = make_pipeline_probe(program, engine);  // check_window's, its shift built on demand
  std::vector<TimeNs> anchor(std::size_t(micro_batches), -1);
  const RoleProgram& role0 = program.roles[0];
  for (std::size_t i = 0; i < role0.ops.size(); ++i) {
    const Op& op = role0.ops[i];
    if (op.kind == OpKind::forward && op.micro_batch >= 0 && anchor[std::size_t(op.micro_batch)] < 0)
      anchor[std::size_t(op.micro_batch)] = pr.start[0][i];
  }
  const int d = period_micro_batches(plan);
  for (const int span : {d, 2 * d}) {
    set_span(pr, span);
    build_shift(pr);
    set_span(lazy, span);
    for (std::int64_t k = 0; k + span < micro_batches; ++k) {
      const TimeNs t = anchor[std::size_t(k)], period = anchor[std::size_t(k + span)] - t;
      if (t < 0 || period <= 0) continue;
      for (const TimeNs off : {TimeNs(0), TimeNs(-1), TimeNs(1)}) {
        INFO(plan.model.name << " " << pipeline_schedule_name(plan.parallelism.pp_schedule) << " span " << span
                             << " k " << k << " offset " << off);
        const auto fast = check_window(lazy, t + off, period);
        const auto ref = reference_check_window(pr, t + off, period);
        const bool ends = ends_recur(pr, t + off, period);
        ++counts.tried;
        REQUIRE(fast.has_value() == ref.has_value());
        if (ref) REQUIRE(ends);
        counts.rejected_by_ends += !ends;
        if (!fast) continue;
        ++counts.recurring;
        CHECK(fast->ops == ref->ops);
        CHECK(fast->busy_ns == ref->busy_ns);
        CHECK(fast->floor_s == ref->floor_s);  // bitwise: the same sums in the same order
      }
    }
  }
}

}  // namespace

TEST_CASE("the window check reading ops in end order answers as the scan of every op did") {
  Counts counts;
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                             PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble}) {
    const int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    const int mb = s == PipelineSchedule::interleaved_1f1b ? 32 : 16;
    compare_windows(test::pipelined_plan("llama-tiny", "cpu", shape(4, 2, 1), s, vpp, 64, mb, RecomputeMode::none), mb,
                    counts);
    compare_windows(test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), s, vpp, 4096, mb,
                                         RecomputeMode::full),
                    mb, counts);
  }
  // A long transient (lock-in near micro-batch 90; steady_state_pipeline.cpp kWindowPeriods).
  compare_windows(load_plan(FSDPX_TEST_DATA_DIR "/plans/llama3.1-70b-dgx-h100x512-pp4-tp4-1f1b.json"), 112, counts);
  MESSAGE(counts.recurring << " of " << counts.tried << " windows recur; the ends' condition rejects "
                            << counts.rejected_by_ends);
  CHECK(counts.recurring > 0);
  CHECK(counts.recurring < counts.tried);
  CHECK(2 * counts.rejected_by_ends > counts.tried - counts.recurring);
}

}  // namespace fsdpx
