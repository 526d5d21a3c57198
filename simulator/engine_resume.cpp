// simulator/engine_resume.cpp — engine_resume.h: the engine started from another run's snapshot. What a
// snapshot leaves out follows from its slots: an op of a stream before the slot's next position has
// started, and has ended unless it is the slot's current op; so each op's unfinished dependencies are its
// dependencies less those ended (counted over the resumed program's successor lists), and a rendezvous's
// arrivals are its members waiting on their slots. Every stream is marked as one that may start an op: a
// stream so marked whose head cannot start is scanned and left (engine.cpp scan_instance), so the marks
// change no start.
#include "simulator/engine_resume.h"

#include <algorithm>
#include <iterator>

#include "core/errors.h"
#include "simulator/engine_state.h"
#include "simulator/shared_prefix.h"

namespace fsdpx {
namespace engine_detail {

Engine::Engine(const StepProgram& program, const EngineOptions& options, std::vector<RoleData> roles,
               const Snapshot& from, const EngineResult& earlier)
    : program_(program), options_(options), roles_(std::move(roles)) {
  FSDP_CHECK(!options_.expand_ranks && options_.overlap, "a resumed run needs one instance per role and overlap");
  FSDP_CHECK(from.instances.size() == roles_.size(), "a snapshot of another pipeline");
  inst_ = from.instances;
  int op_base = 0;
  for (std::size_t r = 0; r < inst_.size(); ++r) {
    Instance& in = inst_[r];
    FSDP_CHECK(in.role == int(r) && in.rank == 0, "a snapshot's instances out of order");
    in.op_base = op_base;
    op_base += int(roles_[r].ops.size());
    in.ready_streams = (1u << kStreamCount) - 1;
  }
  flatten_rendezvous();
  is_dirty_.assign(inst_.size(), 0);
  is_rates_dirty_.assign(inst_.size(), 0);
  rates_dirty_ = from.rates_dirty;
  for (int i : rates_dirty_) is_rates_dirty_[std::size_t(i)] = 1;
  next_end_ns_ = from.next_end_ns;
  running_count_ = from.running_count;
  now_ = from.now_ns;
  result_.step_time_ns = from.step_time_ns;
  if (options_.record_ops) {
    FSDP_CHECK(earlier.ops.size() >= from.records && earlier.memory_samples.size() >= from.samples,
               "the earlier run kept no records to resume from");
    result_.ops.assign(earlier.ops.begin(), earlier.ops.begin() + std::ptrdiff_t(from.records));
    result_.memory_samples.assign(earlier.memory_samples.begin(),
                                  earlier.memory_samples.begin() + std::ptrdiff_t(from.samples));
  }
  resume_counters();
}

void Engine::resume_counters() {
  for (const RoleData& rd : roles_) deps_left_.insert(deps_left_.end(), rd.dep_counts.begin(), rd.dep_counts.end());
  rendezvous_arrivals_.assign(program_.rendezvous.size(), 0);
  for (Instance& in : inst_) {
    const RoleProgram& role = program_.roles[std::size_t(in.role)];
    const RoleData& rd = roles_[std::size_t(in.role)];
    int ended = 0;
    for (std::size_t s = 0; s < role.streams.size(); ++s) {
      const std::vector<int>& order = role.streams[s];
      const Slot& sl = in.slots[s];
      FSDP_CHECK(std::size_t(sl.next_pos) <= order.size(), "a snapshot past its stream");
      const bool busy = sl.phase != Phase::idle;
      FSDP_CHECK(!busy || (sl.next_pos > 0 && order[std::size_t(sl.next_pos - 1)] == sl.op),
                 "a snapshot's running op is not its stream's last started");
      for (int j = 0; j < sl.next_pos - (busy ? 1 : 0); ++j) {
        const OpData& od = rd.ops[std::size_t(order[std::size_t(j)])];
        for (int k = od.succ_begin; k < od.succ_end; ++k) --deps_left_[std::size_t(in.op_base + rd.succ[std::size_t(k)])];
        ++ended;
      }
      if (sl.phase == Phase::waiting_group) {
        const int r = rd.ops[std::size_t(sl.op)].rendezvous;
        FSDP_CHECK(r >= 0, "an op waits on no rendezvous");
        ++rendezvous_arrivals_[std::size_t(r)];
      }
    }
    FSDP_CHECK(ended == in.done, "a snapshot's ended ops do not match its streams");
  }
}

}  // namespace engine_detail

namespace {

bool resumable(const EngineOptions& o) { return o.overlap && !o.expand_ranks; }

}  // namespace

// Event times between two snapshots of a run of `program`.
std::size_t snapshot_interval(const StepProgram& program, std::size_t snapshots_per_run) {
  std::size_t ops = 0;
  for (const RoleProgram& role : program.roles) ops += role.ops.size();
  return std::max<std::size_t>(1, ops / std::max<std::size_t>(1, snapshots_per_run));
}

EngineResult run_engine_keeping_snapshots(const StepProgram& program, const EngineOptions& options,
                                          EngineSnapshots& out, std::size_t snapshots_per_run) {
  engine_detail::Engine engine(program, options);
  auto run = std::make_shared<engine_detail::RunSnapshots>();
  if (resumable(options)) engine.keep_snapshots(run.get(), snapshot_interval(program, snapshots_per_run));
  EngineResult result = engine.run();
  out.run = std::move(run);
  out.options = options;
  return result;
}

EngineResult run_engine_resumed(const StepProgram& program, const EngineOptions& options,
                                const StepProgram& earlier_program, const EngineResult& earlier,
                                const EngineSnapshots& snapshots, ResumeInfo* info, EngineSnapshots* keep) {
  using namespace engine_detail;
  const auto from_start = [&] {
    return keep ? run_engine_keeping_snapshots(program, options, *keep) : run_engine(program, options);
  };
  const RunSnapshots* run = snapshots.run.get();
  const EngineOptions& o = snapshots.options;
  const bool alike = run && !run->snapshots.empty() && resumable(options) && resumable(o) &&
                     o.interference == options.interference && o.infinite_bandwidth == options.infinite_bandwidth &&
                     !earlier.ops.empty();
  if (!alike) return from_start();
  std::vector<RoleData> roles = build_roles(program, options);
  const SharedPrefix shared = shared_prefix(earlier_program, run->roles, earlier, program, roles);
  // The latest snapshot before the runs can differ (snapshots are in time order).
  auto from = std::find_if(run->snapshots.rbegin(), run->snapshots.rend(),
                           [&](const Snapshot& s) { return s.now_ns < shared.until_ns; });
  if (info) *info = ResumeInfo{shared.until_ns, -1, 0};
  if (from == run->snapshots.rend()) return from_start();
  for (const Instance& in : from->instances)
    for (int k = 0; k < kStreamCount; ++k)
      FSDP_CHECK(in.slots[std::size_t(k)].next_pos <= shared.stream_ops[std::size_t(in.role)][std::size_t(k)],
                 "a snapshot before the runs differ has started an op they do not share");
  if (info) info->resumed_at_ns = from->now_ns, info->records_reused = from->records;
  Engine engine(program, options, std::move(roles), *from, earlier);
  if (!keep) return engine.run();
  // The earlier run's snapshots before this one are this run's too (the runs agree up to it); the engine
  // takes its own from here on, this one first.
  auto kept = std::make_shared<RunSnapshots>();
  kept->snapshots.assign(run->snapshots.begin(), std::prev(from.base()));
  engine.keep_snapshots(kept.get(), snapshot_interval(program, kSnapshotsPerRun));
  EngineResult result = engine.run();
  keep->run = std::move(kept);
  keep->options = options;
  return result;
}

}  // namespace fsdpx
