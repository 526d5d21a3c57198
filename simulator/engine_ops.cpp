// simulator/engine_ops.cpp — the life of one op on one instance: start (allocate, enter the latency or
// work phase), the switch to a collective's bandwidth phase, completion (free, record, release
// dependants); the fluid rates of running phases; live memory and its peak. Leaves out stream
// priorities: concurrent collectives on a fabric share it equally.
#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "simulator/engine_state.h"

namespace fsdpx::engine_detail {

void Engine::begin_op(int i, int stream) {
  Instance& in = inst_[i];
  Slot& s = in.slots[stream];
  const OpData& od = data_of(in, s.op);
  s.start_ns = now_;
  apply_alloc(in, op_of(in, s.op).alloc_at_start, s.op);
  if (od.cls == OpClass::collective) {
    in.comm_sm_share += od.sm_share;
    ++in.resident_collectives;
  }
  const int id = i * kStreamCount + stream;
  if (od.cls == OpClass::collective && od.latency_ns > 0) {
    s.phase = Phase::latency;
    s.latency_end_ns = now_ + od.latency_ns;
    add_running(id);
  } else if (od.cls == OpClass::free) {
    complete_op(i, stream);
  } else {
    enter_work_phase(i, stream);
  }
}

void Engine::enter_work_phase(int i, int stream) {
  Instance& in = inst_[i];
  Slot& s = in.slots[stream];
  const OpData& od = data_of(in, s.op);
  s.phase = Phase::work;
  s.remaining_ns = od.work_ns;
  if (od.work_ns <= 0) {
    complete_op(i, stream);
    return;
  }
  add_running(i * kStreamCount + stream);
}

void Engine::complete_op(int i, int stream) {
  Instance& in = inst_[i];
  Slot& s = in.slots[stream];
  const int op = s.op;
  const OpData& od = data_of(in, op);
  const Op& program_op = op_of(in, op);
  if (od.cls == OpClass::collective) {
    // Reset at zero so that rounding in the running sum never leaves a phantom share behind.
    in.comm_sm_share = --in.resident_collectives == 0 ? 0.0 : in.comm_sm_share - od.sm_share;
  }
  apply_free(in, program_op.free_at_end, released_param_bytes(program_, program_op));
  if (options_.record_ops) result_.ops.push_back({in.role, in.rank, op, s.start_ns, now_});
  if (program_op.stream == StreamKind::compute) {
    in.compute_busy_ns += now_ - s.start_ns;
    in.compute_busy_ns_by_kind[static_cast<int>(program_op.kind)] += now_ - s.start_ns;
  }
  const RoleData& rd = roles_[in.role];
  for (int k = od.succ_begin; k < od.succ_end; ++k) --deps_left_[in.op_base + rd.succ[k]];
  s.phase = Phase::idle;
  s.op = -1;
  --in.active;
  if (od.async) --in.active_async;
  ++in.done;
  result_.step_time_ns = std::max(result_.step_time_ns, now_);
  remove_running(i * kStreamCount + stream);
  mark_dirty(i);
}

// Compute runs on the SMs that the resident collective kernels leave free: NCCL launches one CTA per
// channel and each holds its SM until the collective ends (cost-model-facts.md §5: a GEMM losing SMs
// to NCCL CTAs slows by their share). A faster fabric shortens the collective and so its interference.
double Engine::rate_of(const Instance& in, int stream) const {
  const Slot& s = in.slots[stream];
  if (data_of(in, s.op).cls == OpClass::collective) return collective_rate(in, stream);
  return std::max(0.0, 1.0 - in.comm_sm_share);
}

// The rates of all of an instance's collectives come from one progressive filling: next_event_time
// computes it once per instance and event (rates_epoch_), not once per collective.
double Engine::collective_rate(const Instance& in, int stream) const {
  const std::size_t i = std::size_t(&in - inst_.data());
  if (rates_epoch_[i] != epoch_) {
    rates_[i] = collective_rates(in);
    rates_epoch_[i] = epoch_;
  }
  FSDP_CHECK(rates_[i][std::size_t(stream)] > 0, "collective in its bandwidth phase got no bandwidth");
  return std::min(1.0, rates_[i][std::size_t(stream)]);
}

// Max-min fair sharing of the rank's two fabrics (progressive filling, Bertsekas & Gallager, Data
// Networks §6.5.2): every collective in its bandwidth phase speeds up together until one fabric is
// full or it reaches its alone rate of 1; those stop, the others go on. A collective loads each fabric
// by its share when alone, so k equal collectives on one fabric each get 1/k, and a multi-node ring
// that only half-fills NVLink leaves the other half to an intra-node collective. The loads vary
// continuously with link bandwidths, so does every rate (no fabric switch at a bottleneck change).
std::array<double, kStreamCount> Engine::collective_rates(const Instance& in) const {
  constexpr double kEps = 1e-12;
  std::array<double, kStreamCount> rate{};
  // The collectives still filling, in stream order, with their loads (the sums below add them in that
  // order whatever their count).
  std::array<int, kStreamCount> active{};
  std::array<std::array<double, 2>, kStreamCount> load{};
  int n = 0;
  for (int k = 0; k < kStreamCount; ++k) {
    const Slot& s = in.slots[k];
    if (s.phase != Phase::work || data_of(in, s.op).cls != OpClass::collective) continue;
    active[std::size_t(n)] = k;
    load[std::size_t(n++)] = data_of(in, s.op).load;
  }
  std::array<double, 2> capacity{1.0, 1.0};
  while (n > 0) {
    double step = 1.0;
    for (int f = 0; f < 2; ++f) {
      double demand = 0;
      for (int j = 0; j < n; ++j) demand += load[std::size_t(j)][std::size_t(f)];
      if (demand > kEps) step = std::min(step, capacity[std::size_t(f)] / demand);
    }
    for (int j = 0; j < n; ++j) step = std::min(step, 1.0 - rate[std::size_t(active[std::size_t(j)])]);
    for (int j = 0; j < n; ++j) {
      rate[std::size_t(active[std::size_t(j)])] += step;
      for (int f = 0; f < 2; ++f) capacity[std::size_t(f)] -= step * load[std::size_t(j)][std::size_t(f)];
    }
    // Those on a full fabric or at their alone rate stop; the others go on.
    int kept = 0;
    for (int j = 0; j < n; ++j) {
      const auto& l = load[std::size_t(j)];
      const bool full = (l[0] > kEps && capacity[0] <= kEps) || (l[1] > kEps && capacity[1] <= kEps);
      if (full || rate[std::size_t(active[std::size_t(j)])] >= 1.0 - kEps) continue;
      active[std::size_t(kept)] = active[std::size_t(j)];
      load[std::size_t(kept++)] = l;
    }
    n = kept;
  }
  return rate;
}

void Engine::apply_alloc(Instance& in, const std::vector<MemEffect>& effects, int op) {
  if (effects.empty() && op >= 0) return;
  for (const MemEffect& e : effects) {
    in.live_bytes[static_cast<int>(e.category)] += e.bytes;
    in.live_total_bytes += e.bytes;
  }
  // Strictly greater: the earliest time the peak is reached is the one reported.
  if (in.live_total_bytes > in.peak.total_bytes || op < 0)
    in.peak = {in.live_total_bytes, in.live_bytes, op, now_};
  record_sample(in);
}

void Engine::apply_free(Instance& in, const std::vector<MemEffect>& effects, double released_bytes) {
  if (effects.empty() && released_bytes == 0) return;
  auto free = [&](MemCategory category, double bytes) {
    double& live = in.live_bytes[static_cast<int>(category)];
    live -= bytes;
    // Sums of doubles: allow rounding of 1 byte, or 1e-9 of the largest total seen (a 2^50-byte model).
    FSDP_CHECK(live >= -1.0 - 1e-9 * std::max(bytes, in.peak.total_bytes),
               fmt::format("role {} rank {}: {} bytes below zero ({})", in.role, in.rank,
                           mem_category_name(category), live));
    in.live_total_bytes -= bytes;
  };
  for (const MemEffect& e : effects) free(e.category, e.bytes);
  if (released_bytes > 0) free(MemCategory::transient, released_bytes);
  record_sample(in);
}

void Engine::record_sample(const Instance& in) {
  if (options_.record_ops) result_.memory_samples.push_back({in.role, in.rank, now_, in.live_bytes});
}

void Engine::add_running(int slot_id) {
  if (running_pos_[slot_id] >= 0) return;
  running_pos_[slot_id] = static_cast<int>(running_.size());
  running_.push_back(slot_id);
}

// Swap-and-pop: running_'s order is arbitrary but deterministic; nothing depends on it except the
// order of ended phases, which advance_to sorts.
void Engine::remove_running(int slot_id) {
  const int pos = running_pos_[slot_id];
  if (pos < 0) return;
  const int last = running_.back();
  running_[pos] = last;
  running_pos_[last] = pos;
  running_.pop_back();
  running_pos_[slot_id] = -1;
}

void Engine::mark_dirty(int i) {
  if (is_dirty_[i]) return;
  is_dirty_[i] = 1;
  dirty_.push_back(i);
}

}  // namespace fsdpx::engine_detail
