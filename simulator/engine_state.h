// simulator/engine_state.h — internals of the discrete-event engine (engine*.cpp, not an interface):
// per-op integer data computed once per run, per simulated rank ("instance") its stream slots, the
// phase of the op running on each, fabric counters for bandwidth sharing, live memory and counters;
// snapshots of that state between events (engine_resume.h); and the Engine class that owns them. Leaves
// out everything engine.h's callers need not know.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/errors.h"
#include "simulator/earliest_tree.h"
#include "simulator/engine.h"

namespace fsdpx::engine_detail {

enum class OpClass : std::uint8_t { compute, collective, free };
// An op on a slot: waiting for the rest of its group, in the (unshared) latency phase of a
// collective, or in its work phase (shared bandwidth of a collective, or compute).
enum class Phase : std::uint8_t { idle, waiting_group, latency, work };

// Per op of a role, computed once per run from the program and the options: everything the event loop
// reads of an op, so that it never reads the program's ops (larger, and spread over every role).
struct OpData {
  TimeNs latency_ns = 0;  // collectives: fixed latency phase
  double work_ns = 0;     // integral ns of work at full rate: bandwidth phase, or the compute op
  int succ_begin = 0, succ_end = 0;  // successors (ops that depend on this one) in RoleData::succ
  // Memory effects in RoleData::effects: [alloc_begin, free_begin) at the start, [free_begin, free_end)
  // at the end (Op::alloc_at_start, Op::free_at_end).
  int alloc_begin = 0, free_begin = 0, free_end = 0;
  int group = -1;
  int rendezvous = -1;  // index into StepProgram::rendezvous
  OpClass cls = OpClass::compute;
  OpKind kind = OpKind::forward;
  std::uint8_t stream = 0;
  bool async = false;   // a pipeline send: does not hold back later ops when overlap is off
  std::array<double, 2> load{};  // collective: share of NVLink [0] and NIC [1] bandwidth when alone
  double sm_share = 0;  // collective: SMs its kernel holds (0 when interference is off)
  double released_bytes = 0;  // transient bytes freed at the end besides its effects (released_param_bytes)
};

struct RoleData {
  int first_instance = 0;
  int instances = 1;   // role_ranks when expanded, else 1
  int first_rank = 0;  // global rank of the role's rank 0 (sum of earlier roles' role_ranks)
  std::vector<OpData> ops;
  std::vector<int> succ;  // CSR successor lists
  std::vector<std::uint8_t> succ_stream;  // per entry of succ: that successor's stream
  std::vector<MemEffect> effects;  // every op's memory effects, in op order (OpData's ranges)
  std::vector<int> dep_counts;     // per op: its dependencies (each instance's counters start there)
};

// One stream of one instance.
struct Slot {
  int op = -1;
  Phase phase = Phase::idle;
  bool running = false;  // in a timed phase (latency or work)
  bool timed = false;    // finish_ns holds the current phase's end (set by refresh_instance)
  int next_pos = 0;      // next position in the role's stream order
  TimeNs start_ns = 0;
  TimeNs latency_end_ns = 0;
  // Work phase: remaining_ns of work at full rate were left at ref_ns; since then it falls at `rate`,
  // which changes only when its own instance's running set does (refresh_rates).
  TimeNs ref_ns = 0;
  double remaining_ns = 0;
  double rate = 1;
  TimeNs finish_ns = 0;  // end of the current phase at the current rate
};

struct Instance {
  int role = 0;
  int rank = 0;
  int op_base = 0;     // offset of this instance's per-op counters in the flat arrays
  int next_issue = 0;  // overlap off: next op in issue order
  int active = 0;      // slots not idle
  int active_async = 0;  // of which pipeline sends
  int done = 0;        // completed ops
  // Streams that may start an op (bit per stream): its slot became idle, or one of its ops lost its last
  // dependency, since the stream was last scanned. Other streams cannot start one (scan_instance).
  std::uint32_t ready_streams = (1u << kStreamCount) - 1;
  double comm_sm_share = 0;       // SMs held by resident collective kernels (latency or work phase)
  int resident_collectives = 0;
  std::array<Slot, kStreamCount> slots{};
  std::array<double, kMemCategoryCount> live_bytes{};
  double live_total_bytes = 0;
  MemoryPeak peak;
  TimeNs compute_busy_ns = 0;
  std::array<TimeNs, kOpKindCount> compute_busy_ns_by_kind{};
};

// Seconds-derived nanoseconds rounded up; 1e-3 ns of slack absorbs floating-point noise so that
// 1.5e-6 s gives 1500 ns, not 1501.
// Inline: the event loop calls it whenever a phase's rate changes.
inline TimeNs ceil_ns(double ns) {
  FSDP_CHECK(std::isfinite(ns), "non-finite duration");
  if (ns <= 0) return 0;
  return static_cast<TimeNs>(std::ceil(ns - 1e-3));
}

// Validates the program (streams list every op once, on its own stream; deps in range; memory
// effects non-negative) and precomputes OpData. engine_setup.cpp.
std::vector<RoleData> build_roles(const StepProgram& program, const EngineOptions& options);

// Member k of rendezvous r names an op in range of a role that no earlier member has, and that op names
// r back (all on one stream kind: a send and its receive sit on matching streams, checked by the
// lowering's pairing). engine_setup.cpp; the engine checks each member as it flattens the lists.
void check_rendezvous_member(const StepProgram& program, const std::vector<RoleData>& roles, std::size_t r,
                             std::size_t k);

// The state between two event times (after every op that starts at `now_ns` has started), less what
// depends on the program's op ids beyond the ops started (dependency counters, rendezvous arrivals: both
// follow from the slots) and the append-only records and samples (their counts).
struct Snapshot {
  TimeNs now_ns = 0;
  std::vector<Instance> instances;
  EarliestTree next_end_ns;
  int running_count = 0;
  std::vector<int> rates_dirty;
  std::size_t records = 0, samples = 0;
  TimeNs step_time_ns = 0;
};

// A run's snapshots, in time order, and its per-op data (engine_resume.cpp compares it with a longer
// program's).
struct RunSnapshots {
  std::vector<RoleData> roles;
  std::vector<Snapshot> snapshots;
};

class Engine {
 public:
  Engine(const StepProgram& program, const EngineOptions& options);
  // Resumes a run of `program` from `from`, a snapshot of a run of another program that starts the same
  // ops up to it (engine_resume.cpp); `roles` are `program`'s, `earlier` that run's result.
  Engine(const StepProgram& program, const EngineOptions& options, std::vector<RoleData> roles,
         const Snapshot& from, const EngineResult& earlier);
  // Takes a snapshot every `every_events` event times into `out` (and leaves the roles' data there).
  void keep_snapshots(RunSnapshots* out, std::size_t every_events);
  EngineResult run();

 private:
  // engine.cpp: the event loop.
  void init_instances();
  void flatten_rendezvous();
  TimeNs next_event_time();
  void advance_to(TimeNs t);
  void handle_ended();
  void start_ready();
  void scan_instance(int i);
  void try_start(int i, int op);
  void arrive_at_group(int i, int op);
  void arrive_at_rendezvous(int i, int op);
  void check_all_done() const;
  EngineResult collect_result();
  Snapshot snapshot() const;
  // engine_resume.cpp: the dependency counters and rendezvous arrivals of the resumed instances.
  void resume_counters();
  // engine_ops.cpp: op lifecycle and memory.
  void begin_op(int i, int stream);
  void enter_work_phase(int i, int stream);
  void complete_op(int i, int stream);
  // The rate of the op on `stream`, given the instance's max-min collective rates.
  double rate_of(const Instance& in, int stream, const std::array<double, kStreamCount>& collective) const;
  // Max-min fair rates of every collective of `in` in its bandwidth phase (0 for other streams).
  std::array<double, kStreamCount> collective_rates(const Instance& in) const;
  void apply_alloc(Instance& in, std::span<const MemEffect> effects, int op);
  // Frees `effects`, then `released_bytes` of transient memory (the unit parameters an op releases).
  void apply_free(Instance& in, std::span<const MemEffect> effects, double released_bytes);
  void record_sample(const Instance& in);
  void add_running(int slot_id);
  void remove_running(int slot_id);
  void mark_dirty(int i);
  // Rates and finish times: recomputed only for instances whose running set changed (engine_ops.cpp).
  void mark_rates_dirty(int i);
  void refresh_rates();
  void refresh_instance(int i);

  Slot& slot(int slot_id) { return inst_[slot_id / kStreamCount].slots[slot_id % kStreamCount]; }
  const Op& op_of(const Instance& in, int op) const { return program_.roles[in.role].ops[op]; }  // messages
  const OpData& data_of(const Instance& in, int op) const { return roles_[in.role].ops[op]; }
  std::span<const MemEffect> allocs_of(const Instance& in, const OpData& od) const {
    return {roles_[in.role].effects.data() + od.alloc_begin, std::size_t(od.free_begin - od.alloc_begin)};
  }
  std::span<const MemEffect> frees_of(const Instance& in, const OpData& od) const {
    return {roles_[in.role].effects.data() + od.free_begin, std::size_t(od.free_end - od.free_begin)};
  }

  const StepProgram& program_;
  EngineOptions options_;
  std::vector<RoleData> roles_;
  std::vector<Instance> inst_;
  std::vector<int> deps_left_;    // per (instance, op): unfinished dependencies
  std::vector<int> arrivals_;     // expanded mode, per (leader instance, op): members arrived
  std::vector<int> group_sizes_;  // expanded mode, per group: members per instance
  std::vector<int> rendezvous_arrivals_;  // per (rendezvous, instance index within a role)
  int instances_per_role_ = 1;
  int running_count_ = 0;          // slots in a timed phase
  // Per instance: the earliest end of its running phases (max when none), kept by refresh_instance.
  EarliestTree next_end_ns_;
  std::vector<int> ended_;
  std::vector<int> dirty_, dirty_round_;
  std::vector<char> is_dirty_;
  std::vector<int> rates_dirty_;  // instances whose running set changed since their last refresh
  std::vector<char> is_rates_dirty_;
  std::vector<int> members_;
  // program_.rendezvous flattened: rendezvous r's members are rendezvous_members_[rendezvous_begin_[r] ..
  // rendezvous_begin_[r + 1]), each with its op's stream.
  struct RendezvousMember {
    int role = 0, op = 0, stream = 0;
  };
  std::vector<int> rendezvous_begin_;
  std::vector<RendezvousMember> rendezvous_members_;
  std::vector<int> at_next_event_;  // instances whose earliest end is the next event (next_event_time)
  TimeNs now_ = 0;
  EngineResult result_;
  RunSnapshots* snapshots_ = nullptr;  // where snapshots go (keep_snapshots), else none are taken
  std::size_t snapshot_every_ = 0;
};

}  // namespace fsdpx::engine_detail
