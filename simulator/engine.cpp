// simulator/engine.cpp — the event loop of the discrete-event engine (engine.h). Virtual time is
// integer ns (ns-3, SimGrid); at each event time the loop (1) ends the phases that finish then, in
// (instance, stream) order, (2) starts every op that became ready, scanning instances in (role, rank)
// order and streams in StreamKind order until nothing changes, (3) recomputes the rates and finish times
// of the instances whose running ops changed (rates depend only on an instance's own running ops), and
// takes the next event as the earliest of the instances' earliest finish times. Per event the rate work
// is that of the instances it touches, not of every running op.
#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/errors.h"
#include "simulator/engine_state.h"
#include "program/group_members.h"

namespace fsdpx {
namespace engine_detail {

Engine::Engine(const StepProgram& program, const EngineOptions& options)
    : program_(program), options_(options), roles_(build_roles(program, options)) {
  if (options_.expand_ranks)
    for (const ProcessGroup& g : program_.groups) {
      group_sizes_.push_back(group_size(program_.mesh, g));
      FSDP_CHECK(group_sizes_.back() == g.shape.ranks,
                 fmt::format("group of {} ranks on the mesh but shape says {}", group_sizes_.back(),
                             g.shape.ranks));
    }
  init_instances();
}

void Engine::init_instances() {
  std::size_t ops = 0;
  for (const RoleData& rd : roles_) ops += rd.ops.size() * std::size_t(rd.instances);
  deps_left_.reserve(ops);
  int op_base = 0;
  for (std::size_t r = 0; r < roles_.size(); ++r) {
    const RoleProgram& role = program_.roles[r];
    for (int k = 0; k < roles_[r].instances; ++k) {
      Instance in;
      in.role = static_cast<int>(r);
      in.rank = k;
      in.op_base = op_base;
      op_base += static_cast<int>(role.ops.size());
      deps_left_.insert(deps_left_.end(), roles_[r].dep_counts.begin(), roles_[r].dep_counts.end());
      inst_.push_back(in);
    }
  }
  if (options_.expand_ranks) arrivals_.assign(deps_left_.size(), 0);
  instances_per_role_ = roles_.empty() ? 1 : roles_.front().instances;
  rendezvous_arrivals_.assign(program_.rendezvous.size() * std::size_t(instances_per_role_), 0);
  flatten_rendezvous();
  is_dirty_.assign(inst_.size(), 0);
  is_rates_dirty_.assign(inst_.size(), 0);
  next_end_ns_ = EarliestTree(int(inst_.size()));
  result_.step_time_ns = 0;
  // Resident state (sharded parameters, optimizer state, overheads) is live at t = 0.
  for (std::size_t i = 0; i < inst_.size(); ++i) {
    Instance& in = inst_[i];
    apply_alloc(in, program_.roles[in.role].resident, -1);
    mark_dirty(static_cast<int>(i));
  }
}

void Engine::flatten_rendezvous() {
  rendezvous_begin_.reserve(program_.rendezvous.size() + 1);
  for (std::size_t r = 0; r < program_.rendezvous.size(); ++r) {
    rendezvous_begin_.push_back(int(rendezvous_members_.size()));
    const auto& members = program_.rendezvous[r];
    for (std::size_t k = 0; k < members.size(); ++k) {
      check_rendezvous_member(program_, roles_, r, k);
      const OpRef& m = members[k];
      rendezvous_members_.push_back({m.role, m.op, roles_[std::size_t(m.role)].ops[std::size_t(m.op)].stream});
    }
  }
  rendezvous_begin_.push_back(int(rendezvous_members_.size()));
}

EngineResult Engine::run() {
  start_ready();
  // Every iteration ends at least one phase (the earliest), and an op has at most two phases per
  // instance, so the loop is bounded; the check guards the invariant.
  const std::size_t max_iterations = 2 * deps_left_.size() + 1;
  std::size_t iterations = 0;
  while (running_count_ > 0) {
    // Between two event times: every op that starts at now_ has started (engine_resume.h).
    if (snapshots_ && iterations % snapshot_every_ == 0) snapshots_->snapshots.push_back(snapshot());
    FSDP_CHECK(++iterations <= max_iterations, "engine made no progress");
    const TimeNs t = next_event_time();
    FSDP_CHECK(t >= now_, "event in the past");
    advance_to(t);
    handle_ended();
    start_ready();
  }
  check_all_done();
  EngineResult result = collect_result();
  if (snapshots_) snapshots_->roles = std::move(roles_);
  return result;
}

void Engine::keep_snapshots(RunSnapshots* out, std::size_t every_events) {
  FSDP_CHECK(every_events > 0, "snapshots need an interval");
  snapshots_ = out;
  snapshot_every_ = every_events;
}

Snapshot Engine::snapshot() const {
  return Snapshot{now_, inst_, next_end_ns_, running_count_, rates_dirty_, result_.ops.size(),
                  result_.memory_samples.size(), result_.step_time_ns};
}

// Rates change only when an instance's running ops do, so each running phase's end holds until then;
// the next event is the earliest of the instances' earliest ends (one integer per instance, in a min-tree).
// The instances that reach it are listed in increasing order for advance_to.
TimeNs Engine::next_event_time() {
  refresh_rates();
  next_end_ns_.earliest_instances(at_next_event_);
  return next_end_ns_.earliest();
}

// Ends every phase that finishes at t, in (instance, stream) order. The others' remaining work is brought
// up to date only when their instance's rates change (refresh_instance); every instance with an ended
// phase is refreshed before the next event (handle_ended marks it).
void Engine::advance_to(TimeNs t) {
  ended_.clear();
  for (int i : at_next_event_) {
    for (int k = 0; k < kStreamCount; ++k) {
      Slot& s = inst_[i].slots[std::size_t(k)];
      if (!s.running || s.finish_ns != t) continue;
      s.timed = false;
      s.remaining_ns = 0;
      s.ref_ns = t;
      ended_.push_back(int(i) * kStreamCount + k);
    }
  }
  now_ = t;
}

void Engine::handle_ended() {
  for (int id : ended_) {
    const int i = id / kStreamCount, stream = id % kStreamCount;
    if (slot(id).phase == Phase::latency)
      enter_work_phase(i, stream);
    else
      complete_op(i, stream);
  }
}

// Dirty instances (an op of theirs ended, or a group they wait in started) are scanned in increasing
// order, in rounds, until a round starts nothing new (zero-length ops end at once and free more).
void Engine::start_ready() {
  while (!dirty_.empty()) {
    dirty_round_.swap(dirty_);
    dirty_.clear();
    std::sort(dirty_round_.begin(), dirty_round_.end());
    for (int i : dirty_round_) is_dirty_[i] = 0;
    for (int i : dirty_round_) scan_instance(i);
  }
}

void Engine::scan_instance(int i) {
  Instance& in = inst_[i];
  const RoleProgram& role = program_.roles[in.role];
  if (!options_.overlap) {
    // One op at a time in issue order, whatever its stream; pipeline sends run alongside (asynchronous
    // sends: a blocking one would deadlock 1F1B, whose neighbours post their receives in another order).
    const int n = static_cast<int>(role.ops.size());
    while (in.active == in.active_async && in.next_issue < n && deps_left_[in.op_base + in.next_issue] == 0 &&
           in.slots[data_of(in, in.next_issue).stream].phase == Phase::idle)
      try_start(i, in.next_issue++);
    return;
  }
  // Only streams marked ready can start an op; the mask is read again after each stream, since an op that
  // ends at once (a free) marks others, as the scan of every stream found them.
  for (int s = 0; s < static_cast<int>(role.streams.size()); ++s) {
    if (!(in.ready_streams >> s & 1u)) continue;
    in.ready_streams &= ~(1u << s);
    const std::vector<int>& order = role.streams[s];
    Slot& sl = in.slots[s];
    while (sl.phase == Phase::idle && sl.next_pos < static_cast<int>(order.size()) &&
           deps_left_[in.op_base + order[sl.next_pos]] == 0)
      try_start(i, order[sl.next_pos++]);
    // The stream's next op is read when this one ends: fetch its data now (a whole step's ops do not fit
    // in the cache, and the roles' ops are visited in turn). A hint only.
    if (sl.next_pos < static_cast<int>(order.size())) {
      const int next = order[sl.next_pos];
      const char* data = reinterpret_cast<const char*>(&data_of(in, next));
      __builtin_prefetch(data);
      __builtin_prefetch(data + sizeof(OpData) - 1);  // it may span two cache lines
      __builtin_prefetch(&deps_left_[in.op_base + next]);
    }
  }
}

void Engine::try_start(int i, int op) {
  Instance& in = inst_[i];
  const OpData& od = data_of(in, op);
  Slot& sl = in.slots[od.stream];
  FSDP_CHECK(sl.phase == Phase::idle, "stream busy");
  sl.op = op;
  ++in.active;
  if (od.async) ++in.active_async;
  if (od.rendezvous >= 0) {
    arrive_at_rendezvous(i, op);
  } else if (od.cls == OpClass::collective && options_.expand_ranks) {
    arrive_at_group(i, op);
  } else {
    begin_op(i, od.stream);  // under symmetry the instance stands for every member of its groups
  }
}

// Expanded mode: the collective waits until every member of its group instance has reached it, then
// all members start it at the same time. The arrival count lives at the group's lowest rank.
void Engine::arrive_at_group(int i, int op) {
  Instance& in = inst_[i];
  const OpData& od = data_of(in, op);
  FSDP_CHECK(od.group >= 0 && od.group < static_cast<int>(program_.groups.size()),
             fmt::format("collective {} names no process group", op_label(op_of(in, op), op)));
  in.slots[od.stream].phase = Phase::waiting_group;
  const RoleData& rd = roles_[in.role];
  group_members(program_.mesh, program_.groups[od.group], in.rank, members_);
  const int leader = rd.first_instance + members_.front();
  if (++arrivals_[inst_[leader].op_base + op] < group_sizes_[od.group]) return;
  for (int member_rank : members_) {
    const int m = rd.first_instance + member_rank;
    FSDP_CHECK(inst_[m].slots[od.stream].op == op, "group member is not waiting on this collective");
    begin_op(m, od.stream);
    mark_dirty(m);
  }
}

// Ops of several roles that start together: each waits until the op of every member role, on the
// instance with the same index (the same mesh point), has reached it; then all start at once.
void Engine::arrive_at_rendezvous(int i, int op) {
  Instance& in = inst_[i];
  const OpData& od = data_of(in, op);
  in.slots[od.stream].phase = Phase::waiting_group;
  const int first = rendezvous_begin_[std::size_t(od.rendezvous)], end = rendezvous_begin_[std::size_t(od.rendezvous) + 1];
  int& arrived = rendezvous_arrivals_[std::size_t(od.rendezvous) * std::size_t(instances_per_role_) + in.rank];
  if (++arrived < end - first) return;
  for (int j = first; j < end; ++j) {
    const RendezvousMember& m = rendezvous_members_[std::size_t(j)];
    const int k = roles_[m.role].first_instance + in.rank;
    FSDP_CHECK(inst_[k].slots[m.stream].op == m.op, "rendezvous member is not waiting on its op");
    begin_op(k, m.stream);
    mark_dirty(k);
  }
}

void Engine::check_all_done() const {
  for (const Instance& in : inst_) {
    const RoleProgram& role = program_.roles[in.role];
    if (in.done == static_cast<int>(role.ops.size())) continue;
    int stuck = -1;
    for (std::size_t s = 0; s < role.streams.size() && stuck < 0; ++s)
      if (in.slots[s].next_pos < static_cast<int>(role.streams[s].size()))
        stuck = role.streams[s][in.slots[s].next_pos];
    if (!options_.overlap) stuck = in.next_issue;
    FSDP_CHECK(false, fmt::format("role {} rank {}: deadlock, {} of {} ops done; op {} never started "
                                  "(dependency cycle or a stream order against the dependencies)",
                                  in.role, in.rank, in.done, role.ops.size(),
                                  stuck >= 0 ? op_label(role.ops[stuck], stuck) : "?"));
  }
}

namespace {

// The records in (end, role, rank, op) order. complete_op appends each at the engine's time, which never
// decreases (run() checks it), so they are in end order already: only each run of records ending at the
// same time is sorted, by (role, rank, op). A record is one op of one instance, so the order is total and
// the result is the whole sort's, record for record (issue 36: the whole sort was 12% of the 405B
// torchtitan search on 32 nodes, whose probes record every op).
void sort_records(std::vector<OpTiming>& ops) {
  for (auto run = ops.begin(); run != ops.end();) {
    const TimeNs end_ns = run->end_ns;
    const auto next = std::find_if(run, ops.end(), [&](const OpTiming& o) { return o.end_ns != end_ns; });
    FSDP_CHECK(next == ops.end() || next->end_ns > end_ns, "op records out of end order");
    if (next - run > 1)
      std::sort(run, next, [](const OpTiming& a, const OpTiming& b) {
        return std::tie(a.role, a.rank, a.op) < std::tie(b.role, b.rank, b.op);
      });
    run = next;
  }
}

}  // namespace

EngineResult Engine::collect_result() {
  sort_records(result_.ops);
  for (const RoleData& rd : roles_) {
    const Instance* worst_memory = &inst_[rd.first_instance];
    const Instance* busiest = worst_memory;
    for (int k = 1; k < rd.instances; ++k) {
      const Instance& in = inst_[rd.first_instance + k];
      if (in.peak.total_bytes > worst_memory->peak.total_bytes) worst_memory = &in;
      if (in.compute_busy_ns > busiest->compute_busy_ns) busiest = &in;
    }
    result_.peak_by_role.push_back(worst_memory->peak);
    result_.compute_busy_ns.push_back(busiest->compute_busy_ns);
    result_.compute_busy_ns_by_kind.push_back(busiest->compute_busy_ns_by_kind);
  }
  return std::move(result_);
}

}  // namespace engine_detail

EngineResult run_engine(const StepProgram& program, const EngineOptions& options) {
  engine_detail::Engine engine(program, options);
  return engine.run();
}

}  // namespace fsdpx
