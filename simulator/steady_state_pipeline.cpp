// simulator/steady_state_pipeline.cpp — probe, period windows and extrapolation of
// steady_state_pipeline.h. A window [t, t + P) is anchored on the first stage (role 0): P is the time
// between the first forward (or backward) op of micro-batch k and of k + d, and must repeat for k + 2d.
// The window's ops (those starting in it or running at its start) must map one to one onto the next
// window's ops by the shift "d micro-batches later", op by op in time, structure and memory.
#include "simulator/steady_state_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cost_models/memory.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"

namespace fsdpx {

namespace {

using MemoryBytes = std::array<double, kMemCategoryCount>;

// An op's identity: kind, stream, payload, stage, segment, unit, micro-batch and its ordinal among ops
// equal in all of these (a unit all-gathered in forward and again in backward), packed in 64 bits; 0
// where a field does not fit (no shift is found for such ops, so no window containing them recurs).
std::uint64_t key_of(const Op& op, int micro_batch, int ordinal) {
  const std::uint64_t fields[] = {std::uint64_t(op.kind), std::uint64_t(op.stream), std::uint64_t(op.payload),
                                  std::uint64_t(ordinal), std::uint64_t(op.stage + 1), std::uint64_t(op.segment + 1),
                                  std::uint64_t(op.unit + 1), std::uint64_t(micro_batch)};
  const int bits[] = {4, 4, 4, 4, 12, 12, 12, 12};
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) {
    if (fields[i] >= (std::uint64_t(1) << bits[i])) return 0;
    key = key << bits[i] | fields[i];
  }
  return key;
}

// Per op of `role`: the id of the same op d micro-batches later, -1 where there is none.
std::vector<int> shift_map(const RoleProgram& role, int d) {
  std::unordered_map<std::uint64_t, int> ids, ordinals;
  ids.reserve(role.ops.size());
  std::vector<int> ordinal(role.ops.size(), 0);
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.micro_batch < 0) continue;
    ordinal[i] = ordinals[key_of(op, op.micro_batch, 0)]++;
    if (const std::uint64_t key = key_of(op, op.micro_batch, ordinal[i])) ids[key] = int(i);
  }
  std::vector<int> shift(role.ops.size(), -1);
  for (std::size_t i = 0; i < role.ops.size(); ++i) {
    const Op& op = role.ops[i];
    if (op.micro_batch < 0) continue;
    const std::uint64_t later = key_of(op, op.micro_batch + d, ordinal[i]);
    const auto it = later ? ids.find(later) : ids.end();
    if (it != ids.end()) shift[i] = it->second;
  }
  return shift;
}

struct Probe {
  const StepProgram& program;
  const EngineResult& engine;
  int d = 1;
  std::vector<std::vector<int>> shift;                      // per role
  std::vector<std::vector<TimeNs>> start, end;              // per role, per op (instance 0)
  std::vector<std::vector<const MemorySample*>> samples;    // per role (instance 0), in time order
};

Probe make_probe(const StepProgram& p, const EngineResult& e, int d) {
  Probe pr{p, e, d, {}, {}, {}, {}};
  for (const RoleProgram& role : p.roles) {
    pr.shift.push_back(shift_map(role, d));
    pr.start.emplace_back(role.ops.size(), -1);
    pr.end.emplace_back(role.ops.size(), -1);
  }
  pr.samples.resize(p.roles.size());
  for (const OpTiming& o : e.ops)
    if (o.rank == 0) pr.start[std::size_t(o.role)][std::size_t(o.op)] = o.start_ns, pr.end[std::size_t(o.role)][std::size_t(o.op)] = o.end_ns;
  for (const MemorySample& s : e.memory_samples)
    if (s.rank == 0) pr.samples[std::size_t(s.role)].push_back(&s);
  return pr;
}

bool same_effects(const std::vector<MemEffect>& a, const std::vector<MemEffect>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const MemEffect& x, const MemEffect& y) { return x.category == y.category && x.bytes == y.bytes; });
}

int shifted(const Probe& pr, int role, int op) {
  const int s = pr.shift[std::size_t(role)][std::size_t(op)];
  return s >= 0 ? s : op;
}

// Op b of `role` is op a d micro-batches later: same work and effects, dependencies and rendezvous
// partners shifted too (ops of no micro-batch, such as a step's first all-gather, stay themselves).
bool same_shifted_op(const Probe& pr, int role, int a_id, int b_id) {
  const RoleProgram& rp = pr.program.roles[std::size_t(role)];
  const Op& a = rp.ops[std::size_t(a_id)];
  const Op& b = rp.ops[std::size_t(b_id)];
  if (a.kind != b.kind || a.stream != b.stream || a.work_set != b.work_set || a.collective != b.collective ||
      a.comm_bytes != b.comm_bytes || a.group != b.group || a.duration_s != b.duration_s ||
      a.latency_s != b.latency_s || a.nvlink_load != b.nvlink_load || a.nic_load != b.nic_load ||
      a.sm_share != b.sm_share || a.release_params != b.release_params || a.deps.size() != b.deps.size() ||
      (a.rendezvous < 0) != (b.rendezvous < 0) || !same_effects(a.alloc_at_start, b.alloc_at_start) ||
      !same_effects(a.free_at_end, b.free_at_end))
    return false;
  for (std::size_t k = 0; k < a.deps.size(); ++k)
    if (b.deps[k] != shifted(pr, role, a.deps[k])) return false;
  if (a.rendezvous < 0) return true;
  const auto& ma = pr.program.rendezvous[std::size_t(a.rendezvous)];
  const auto& mb = pr.program.rendezvous[std::size_t(b.rendezvous)];
  if (ma.size() != mb.size()) return false;
  for (std::size_t k = 0; k < ma.size(); ++k)
    if (mb[k].role != ma[k].role || mb[k].op != shifted(pr, ma[k].role, ma[k].op)) return false;
  return true;
}

// One period of the step: what each role does in it.
struct Window {
  TimeNs start_ns = 0, period_ns = 0;
  std::vector<int> ops;               // per role: ops starting in the window
  std::vector<TimeNs> busy_ns;        // per role: compute-stream time of those ops
  std::vector<double> floor_s;        // per role: their compute-stream durations at full rate
  std::vector<MemoryBytes> change_bytes;  // per role: live memory one period later minus now
};

bool in_window(TimeNs start, TimeNs end, TimeNs from, TimeNs to) {
  return (start >= from && start < to) || (start < from && end > from);
}

// The ops of `role` in [t, t + P) recur exactly P later, as their shifts, and nothing else runs then.
bool ops_recur(const Probe& pr, int role, TimeNs t, TimeNs period, Window& w) {
  const auto& start = pr.start[std::size_t(role)];
  const auto& end = pr.end[std::size_t(role)];
  const RoleProgram& rp = pr.program.roles[std::size_t(role)];
  int in_first = 0, in_second = 0;
  for (int i = 0; i < int(rp.ops.size()); ++i) {
    in_second += in_window(start[std::size_t(i)], end[std::size_t(i)], t + period, t + 2 * period);
    if (!in_window(start[std::size_t(i)], end[std::size_t(i)], t, t + period)) continue;
    const int s = pr.shift[std::size_t(role)][std::size_t(i)];
    if (s < 0 || start[std::size_t(s)] != start[std::size_t(i)] + period ||
        end[std::size_t(s)] != end[std::size_t(i)] + period || !same_shifted_op(pr, role, i, s))
      return false;
    ++in_first;
    if (start[std::size_t(i)] < t) continue;
    ++w.ops[std::size_t(role)];
    if (rp.ops[std::size_t(i)].stream != StreamKind::compute) continue;
    w.busy_ns[std::size_t(role)] += end[std::size_t(i)] - start[std::size_t(i)];
    w.floor_s[std::size_t(role)] += rp.ops[std::size_t(i)].duration_s;
  }
  return in_first == in_second;
}

MemoryBytes difference(const MemorySample& later, const MemorySample& now) {
  MemoryBytes d{};
  for (std::size_t c = 0; c < d.size(); ++c) d[c] = later.by_category[c] - now.by_category[c];
  return d;
}

// Live memory of `role` during [t + P, t + 2P) is that of [t, t + P), P later, plus one constant change.
bool memory_recurs(const Probe& pr, int role, TimeNs t, TimeNs period, MemoryBytes& change) {
  std::vector<const MemorySample*> a, b;
  for (const MemorySample* s : pr.samples[std::size_t(role)]) {
    if (s->at_ns >= t && s->at_ns < t + period) a.push_back(s);
    if (s->at_ns >= t + period && s->at_ns < t + 2 * period) b.push_back(s);
  }
  if (a.size() != b.size()) return false;
  change = a.empty() ? MemoryBytes{} : difference(*b.front(), *a.front());
  for (std::size_t c = 0; c < change.size() && !a.empty(); ++c)  // rounding of sums is no change
    if (std::abs(change[c]) <= 1e-9 * std::max(1.0, std::abs(a.front()->by_category[c]))) change[c] = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (b[i]->at_ns != a[i]->at_ns + period) return false;
    const MemoryBytes d = difference(*b[i], *a[i]);
    for (std::size_t c = 0; c < d.size(); ++c)
      if (std::abs(d[c] - change[c]) > 1e-9 * std::max({1.0, std::abs(a[i]->by_category[c]), std::abs(b[i]->by_category[c])}))
        return false;
  }
  return true;
}

std::optional<Window> check_window(const Probe& pr, TimeNs t, TimeNs period) {
  const std::size_t roles = pr.program.roles.size();
  Window w{t, period, std::vector<int>(roles, 0), std::vector<TimeNs>(roles, 0), std::vector<double>(roles, 0),
           std::vector<MemoryBytes>(roles, MemoryBytes{})};
  for (int r = 0; r < int(roles); ++r)
    if (!ops_recur(pr, r, t, period, w) || !memory_recurs(pr, r, t, period, w.change_bytes[std::size_t(r)]))
      return std::nullopt;
  return w;
}

// First op of role 0 of the given kinds per micro-batch (-1 where none).
std::vector<int> anchors(const StepProgram& p, std::int64_t micro_batches, bool backward) {
  std::vector<int> first(std::size_t(micro_batches), -1);
  const RoleProgram& role = p.roles[0];
  for (int i = 0; i < int(role.ops.size()); ++i) {
    const Op& op = role.ops[std::size_t(i)];
    const bool kind = backward ? (op.kind == OpKind::backward || op.kind == OpKind::backward_input)
                               : op.kind == OpKind::forward;
    if (kind && op.micro_batch >= 0 && first[std::size_t(op.micro_batch)] < 0) first[std::size_t(op.micro_batch)] = i;
  }
  return first;
}

// The latest window anchored on micro-batches k, k + d, k + 2d that recurs.
std::optional<Window> find_window(const Probe& pr, const std::vector<int>& anchor) {
  const int d = pr.d;
  const auto& start = pr.start[0];
  for (int k = int(anchor.size()) - 1 - 2 * d; k >= 0; --k) {
    const int a = anchor[std::size_t(k)], b = anchor[std::size_t(k + d)], c = anchor[std::size_t(k + 2 * d)];
    if (a < 0 || b < 0 || c < 0) continue;
    const TimeNs period = start[std::size_t(b)] - start[std::size_t(a)];
    if (period <= 0 || start[std::size_t(c)] - start[std::size_t(b)] != period) continue;
    if (auto w = check_window(pr, start[std::size_t(a)], period)) return w;
  }
  return std::nullopt;
}

// Ops per role of d consecutive micro-batches in the middle of the probe: what one inserted period adds.
std::vector<int> ops_per_period(const StepProgram& p, std::int64_t micro_batches, int d) {
  const std::int64_t first = (micro_batches / 2 / d) * d;
  std::vector<int> out;
  for (const RoleProgram& role : p.roles)
    out.push_back(int(std::count_if(role.ops.begin(), role.ops.end(), [&](const Op& op) {
      return op.micro_batch >= first && op.micro_batch < first + d;
    })));
  return out;
}

// The windows that together account for one period's ops on every role, in time order: one steady
// window (1F1B, interleaved, ZB-H1), or a forward and a backward one (GPipe).
std::optional<std::vector<Window>> find_windows(const Probe& pr, std::int64_t micro_batches) {
  const std::vector<int> needed = ops_per_period(pr.program, micro_batches, pr.d);
  auto forward = find_window(pr, anchors(pr.program, micro_batches, false));
  if (!forward) return std::nullopt;
  if (forward->ops == needed) return std::vector<Window>{*forward};
  auto backward = find_window(pr, anchors(pr.program, micro_batches, true));
  if (!backward) return std::nullopt;
  std::vector<Window> out{*forward, *backward};
  std::sort(out.begin(), out.end(), [](const Window& x, const Window& y) { return x.start_ns < y.start_ns; });
  if (out[0].start_ns + 2 * out[0].period_ns > out[1].start_ns) return std::nullopt;
  for (std::size_t r = 0; r < needed.size(); ++r)
    if (out[0].ops[r] + out[1].ops[r] != needed[r]) return std::nullopt;
  return out;
}

// Peak live memory of `role` over the step with n more periods in each window: samples after a window
// carry its change n times; samples of a window's first period stand for all its copies, whose highest
// (the first or the last, the change being constant) is taken, the earliest on ties like the engine.
MemoryPeak extrapolated_peak(const Probe& pr, int role, const std::vector<Window>& windows, double n) {
  MemoryPeak best;
  best.total_bytes = -1;
  MemoryBytes offset{};
  std::size_t w = 0;
  for (const MemorySample* s : pr.samples[std::size_t(role)]) {
    for (; w < windows.size() && s->at_ns >= windows[w].start_ns + windows[w].period_ns; ++w)
      for (std::size_t c = 0; c < offset.size(); ++c) offset[c] += n * windows[w].change_bytes[std::size_t(role)][c];
    MemoryBytes live = s->by_category;
    double change_total = 0;
    if (w < windows.size())
      for (double c : windows[w].change_bytes[std::size_t(role)]) change_total += c;
    const bool last_copy = w < windows.size() && s->at_ns >= windows[w].start_ns && change_total > 0;
    double total = 0;
    for (std::size_t c = 0; c < live.size(); ++c) {
      live[c] += offset[c] + (last_copy ? n * windows[w].change_bytes[std::size_t(role)][c] : 0.0);
      total += live[c];
    }
    if (total > best.total_bytes) best = {total, live, -1, s->at_ns};
  }
  return best;
}

// Each stage's peak and the worst one's, with the allocator's reserve (simulate.cpp summarise).
void set_peak(StepTotals& t, const Probe& pr, const std::vector<Window>& windows, double n) {
  MemoryPeak worst;
  worst.total_bytes = -1;
  for (int r = 0; r < int(pr.program.roles.size()); ++r) {
    const MemoryPeak p = extrapolated_peak(pr, r, windows, n);
    t.stages[std::size_t(r)].peak_memory_bytes = p.total_bytes + overhead_bytes(0, p.total_bytes).allocator_headroom;
    if (p.total_bytes > worst.total_bytes) worst = p;
  }
  const double headroom = allocator_headroom_bytes(churn_bytes(worst));
  t.peak_memory_bytes = worst.by_category;
  t.peak_memory_bytes[std::size_t(MemCategory::other)] += headroom;
  t.peak_memory_total_bytes = worst.total_bytes + headroom;
}

bool memory_changes(const std::vector<Window>& windows) {
  for (const Window& w : windows)
    for (const MemoryBytes& m : w.change_bytes)
      for (double c : m)
        if (c != 0) return true;
  return false;
}

// Step, busy time, compute floor (busiest role) and peak with n more periods in every window; per stage
// its busy time, the bubble the periods add and, where memory changes per period, its peak.
StepTotals extrapolate(const Plan& plan, const Probe& pr, const std::vector<Window>& windows, std::int64_t probe) {
  const std::int64_t n = (plan.grad_accum() - probe) / pr.d;
  StepTotals t;
  t.stages.resize(pr.program.roles.size());
  TimeNs step_ns = pr.engine.step_time_ns;
  for (const Window& w : windows) step_ns += n * w.period_ns;
  t.step_time_s = double(step_ns) * 1e-9;
  for (int r = 0; r < int(pr.program.roles.size()); ++r) {
    TimeNs busy_ns = pr.engine.compute_busy_ns[std::size_t(r)];
    double floor_s = 0;
    for (const Op& op : pr.program.roles[std::size_t(r)].ops)
      if (op.stream == StreamKind::compute) floor_s += op.duration_s;
    for (const Window& w : windows) {
      busy_ns += n * w.busy_ns[std::size_t(r)];
      floor_s += double(n) * w.floor_s[std::size_t(r)];
    }
    for (const Window& w : windows)
      t.stages[std::size_t(r)].bubble_s +=
          double(n) * stage_bubble_s(pr.program, pr.engine, r, w.start_ns, w.start_ns + w.period_ns);
    t.stages[std::size_t(r)].compute_s = double(busy_ns) * 1e-9;
    t.compute_busy_s = std::max(t.compute_busy_s, double(busy_ns) * 1e-9);
    t.compute_floor_s = std::max(t.compute_floor_s, floor_s);
  }
  if (memory_changes(windows)) set_peak(t, pr, windows, double(n));
  return t;
}

// Smallest probe: a warm-up of up to pp micro-batches on the first stage, the same in cool-down, and
// room for the two periods a window compares; interleaved 1F1B's periods are pp micro-batches long and
// its warm-up reaches over more of them, so twice as many periods (8 pp). A multiple of d.
std::int64_t first_probe(const Plan& plan, int d) {
  const int pp = plan.parallelism.pp;
  const std::int64_t m = std::max<std::int64_t>(kSteadyStateProbeMicroBatches, d > 1 ? 8 * pp : 2 * pp + 4);
  return (m + d - 1) / d * d;
}

}  // namespace

std::optional<StepTotals> pipeline_step_totals(const Plan& plan, const EngineOptions& options) {
  if (options.expand_ranks) return std::nullopt;
  const std::int64_t micro_batches = plan.grad_accum();
  const int d = plan.parallelism.pp_schedule == PipelineSchedule::interleaved_1f1b ? plan.parallelism.pp : 1;
  EngineOptions probe_options = options;
  probe_options.record_ops = true;
  for (std::int64_t probe = first_probe(plan, d); probe < micro_batches && (micro_batches - probe) % d == 0;
       probe *= 2) {
    StepProgram program = lower(with_micro_batches(plan, probe));
    time_program(program, plan);
    const EngineResult engine = run_engine(program, probe_options);
    const Probe pr = make_probe(program, engine, d);
    const auto windows = find_windows(pr, probe);
    if (!windows) continue;
    StepTotals t = extrapolate(plan, pr, *windows, probe);
    const StepTotals p = probe_totals(summarise(std::move(program), engine), plan, probe);
    if (!memory_changes(*windows)) {
      t.peak_memory_bytes = p.peak_memory_bytes;
      t.peak_memory_total_bytes = p.peak_memory_total_bytes;
    }
    for (std::size_t r = 0; r < t.stages.size(); ++r) {
      StageSummary& st = t.stages[r];
      st.bubble_s += p.stages[r].bubble_s;
      if (!memory_changes(*windows)) st.peak_memory_bytes = p.stages[r].peak_memory_bytes;
      st.idle_fraction = 1.0 - st.compute_s / t.step_time_s;
      t.bubble_fraction += st.bubble_s / double(t.stages.size()) / t.step_time_s;
    }
    t.tokens_per_s_per_gpu = double(plan.training.global_batch) * double(plan.training.seq) / t.step_time_s /
                             double(plan.parallelism.world_size());
    t.mfu = p.mfu * t.tokens_per_s_per_gpu / p.tokens_per_s_per_gpu;
    t.micro_batches = micro_batches;
    t.simulated_micro_batches = probe;
    return t;
  }
  return std::nullopt;
}

}  // namespace fsdpx
