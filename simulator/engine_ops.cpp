// simulator/engine_ops.cpp — the life of one op on one instance: start (allocate, enter the latency or
// work phase), the switch to a collective's bandwidth phase, completion (free, record, release
// dependants); the fluid rates of running phases and their finish times, recomputed per instance when
// its running ops change; live memory and its peak. Leaves out stream
// priorities: concurrent collectives on a fabric share it equally.
#include <algorithm>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "core/errors.h"
#include "simulator/engine_state.h"

namespace fsdpx::engine_detail {

void Engine::begin_op(int i, int stream) {
  Instance& in = inst_[i];
  Slot& s = in.slots[stream];
  const OpData& od = data_of(in, s.op);
  s.start_ns = now_;
  mark_rates_dirty(i);
  apply_alloc(in, allocs_of(in, od), s.op);
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
  s.ref_ns = now_;
  mark_rates_dirty(i);
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

  if (od.cls == OpClass::collective) {
    // Reset at zero so that rounding in the running sum never leaves a phantom share behind.
    in.comm_sm_share = --in.resident_collectives == 0 ? 0.0 : in.comm_sm_share - od.sm_share;
  }
  apply_free(in, frees_of(in, od), od.released_bytes);
  if (options_.record_ops) result_.ops.push_back({in.role, in.rank, op, s.start_ns, now_});
  if (od.stream == static_cast<std::uint8_t>(StreamKind::compute)) {
    in.compute_busy_ns += now_ - s.start_ns;
    in.compute_busy_ns_by_kind[static_cast<int>(od.kind)] += now_ - s.start_ns;
  }
  const RoleData& rd = roles_[in.role];
  for (int k = od.succ_begin; k < od.succ_end; ++k)
    if (--deps_left_[in.op_base + rd.succ[k]] == 0) in.ready_streams |= 1u << rd.succ_stream[k];
  in.ready_streams |= 1u << stream;
  s.phase = Phase::idle;
  s.op = -1;
  --in.active;
  if (od.async) --in.active_async;
  ++in.done;
  mark_rates_dirty(i);
  result_.step_time_ns = std::max(result_.step_time_ns, now_);
  remove_running(i * kStreamCount + stream);
  mark_dirty(i);
}

// Compute runs on the SMs that the resident collective kernels leave free: NCCL launches one CTA per
// channel and each holds its SM until the collective ends (cost-model-facts.md §5: a GEMM losing SMs
// to NCCL CTAs slows by their share). A faster fabric shortens the collective and so its interference.
double Engine::rate_of(const Instance& in, int stream, const std::array<double, kStreamCount>& collective) const {
  const Slot& s = in.slots[stream];
  if (data_of(in, s.op).cls != OpClass::collective) return std::max(0.0, 1.0 - in.comm_sm_share);
  FSDP_CHECK(collective[std::size_t(stream)] > 0, "collective in its bandwidth phase got no bandwidth");
  return std::min(1.0, collective[std::size_t(stream)]);
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

void Engine::apply_alloc(Instance& in, std::span<const MemEffect> effects, int op) {
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

void Engine::apply_free(Instance& in, std::span<const MemEffect> effects, double released_bytes) {
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
  Slot& s = slot(slot_id);
  if (s.running) return;
  s.running = true;
  ++running_count_;
}

void Engine::remove_running(int slot_id) {
  Slot& s = slot(slot_id);
  if (!s.running) return;
  s.running = false;
  s.timed = false;
  --running_count_;
}

void Engine::mark_rates_dirty(int i) {
  if (is_rates_dirty_[i]) return;
  is_rates_dirty_[i] = 1;
  rates_dirty_.push_back(i);
}

// Instances are independent here (an instance's rates depend on its own running ops only), so their
// order does not matter.
void Engine::refresh_rates() {
  for (int i : rates_dirty_) {
    is_rates_dirty_[i] = 0;
    refresh_instance(i);
  }
  rates_dirty_.clear();
}

// A phase whose rate is unchanged keeps its finish time: between its instance's changes an op runs at a
// constant rate, so ref + ceil(remaining / rate) is the end that a recomputation at every event gives.
void Engine::refresh_instance(int i) {
  Instance& in = inst_[i];
  const std::array<double, kStreamCount> collective = collective_rates(in);
  TimeNs next = std::numeric_limits<TimeNs>::max();
  for (int k = 0; k < kStreamCount; ++k) {
    Slot& s = in.slots[k];
    if (!s.running) continue;
    if (s.phase == Phase::latency) {
      s.finish_ns = s.latency_end_ns;
    } else {
      const double rate = rate_of(in, k, collective);
      if (!s.timed || rate != s.rate) {
        s.remaining_ns = std::max(0.0, s.remaining_ns - s.rate * static_cast<double>(now_ - s.ref_ns));
        s.ref_ns = now_;
        s.rate = rate;
        // Rate 0: the collectives hold every SM; compute resumes when one of them ends.
        s.finish_ns = rate > 0 ? now_ + ceil_ns(s.remaining_ns / rate) : std::numeric_limits<TimeNs>::max();
      }
    }
    s.timed = true;
    next = std::min(next, s.finish_ns);
  }
  next_end_ns_.set(i, next);
}

void Engine::mark_dirty(int i) {
  if (is_dirty_[i]) return;
  is_dirty_[i] = 1;
  dirty_.push_back(i);
}

}  // namespace fsdpx::engine_detail
