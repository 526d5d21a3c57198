// simulator/engine_setup.cpp — turns a timed step program into the engine's per-op integer data,
// once per run: durations rounded up to ns, each collective split into a latency phase (not shared)
// and a bandwidth phase (shared with concurrent collectives on the same fabric), successor lists for
// dependency counting. Checks the program's structure (FSDP_CHECK: programs come from the lowering) and
// that every time fits the engine's integer clock (ConfigError: sizes and rates decide durations).
#include <algorithm>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "core/errors.h"
#include "simulator/engine_state.h"

namespace fsdpx::engine_detail {

namespace {

constexpr double kNsPerS = 1e9;
// Longest simulated step, 2^61 ns (73 years): with now <= 2^61 and a phase's remaining time at its rate
// <= 2^61, now + remaining stays inside int64 (engine.cpp next_event_time).
constexpr double kMaxStepNs = 0x1p61;

[[noreturn]] void step_too_long(const std::string& what) {
  throw ConfigError(fmt::format("plan: /: {}, more than the simulator's clock holds (2^61 ns, 73 years): a "
                                "size or rate of the model, batch or cluster is outside any useful range",
                                what));
}

// Op `id`'s time in ns; NaN and infinity fail the range check too.
double op_ns(const Op& op, int id, double time_s) {
  const double ns = time_s * kNsPerS;
  if (!(ns <= kMaxStepNs)) step_too_long(fmt::format("op {} takes {:.3g} s", op_label(op, id), time_s));
  return ns;
}

OpClass op_class(OpKind k) {
  switch (k) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::send:
    case OpKind::recv: return OpClass::collective;
    case OpKind::forward:
    case OpKind::backward:
    case OpKind::backward_input:
    case OpKind::backward_weight:
    case OpKind::optimizer:
    case OpKind::unscale: return OpClass::compute;
    case OpKind::free: return OpClass::free;
  }
  FSDP_CHECK(false, "unknown OpKind");
  return OpClass::free;
}

// Timing of one op under the options. Op::serial_comm_time_s (TP/CP collectives inside a compute op)
// is timed as compute: it neither shares a fabric nor slows other compute (a simplification).
OpData op_data(const Op& op, int id, const EngineOptions& options) {
  // Negative times are a lowering bug; NaN and infinity come from rates at the end of their range and
  // are reported by op_ns.
  FSDP_CHECK(!(op.duration_s < 0) && !(op.latency_s < 0) && !(op.serial_comm_time_s < 0),
             fmt::format("op {}: negative time", op_label(op, id)));
  OpData d;
  d.cls = op_class(op.kind);
  d.kind = op.kind;
  d.stream = static_cast<std::uint8_t>(op.stream);
  d.group = op.group;
  FSDP_CHECK(op.nvlink_load >= 0 && op.nvlink_load <= 1 && op.nic_load >= 0 && op.nic_load <= 1,
             fmt::format("op {}: fabric loads outside [0, 1]", op_label(op, id)));
  d.load = {op.nvlink_load, op.nic_load};
  FSDP_CHECK(op.sm_share >= 0 && op.sm_share <= 1, fmt::format("op {}: sm_share outside [0, 1]", op_label(op, id)));
  if (d.cls == OpClass::collective && options.interference) d.sm_share = op.sm_share;
  d.rendezvous = op.rendezvous;
  d.async = op.kind == OpKind::send;
  if (d.cls == OpClass::collective && !options.infinite_bandwidth) {
    const TimeNs total_ns = ceil_ns(op_ns(op, id, op.duration_s));
    d.latency_ns = std::min(ceil_ns(op_ns(op, id, op.latency_s)), total_ns);
    d.work_ns = static_cast<double>(total_ns - d.latency_ns);
  } else if (d.cls == OpClass::compute) {
    const double time_s =
        options.infinite_bandwidth ? std::max(0.0, op.duration_s - op.serial_comm_time_s) : op.duration_s;
    d.work_ns = static_cast<double>(ceil_ns(op_ns(op, id, time_s)));
  }
  return d;
}

// `where()` names the list's owner in the message, formatted only when the check fails.
template <typename Where>
void check_memory_effects(std::span<const MemEffect> effects, const Where& where) {
  for (const MemEffect& e : effects)
    FSDP_CHECK(std::isfinite(e.bytes) && e.bytes >= 0,
               fmt::format("{}: memory effects hold non-negative bytes (the list gives the sign)", where()));
}

// Every op is listed exactly once, in the stream list of its own stream (read from `ops`, the role's
// engine data: smaller than the program's ops).
void check_streams(const RoleProgram& role, int role_index, const std::vector<OpData>& ops) {
  FSDP_CHECK(role.streams.size() <= static_cast<std::size_t>(kStreamCount),
             fmt::format("role {}: more stream lists than streams", role_index));
  std::vector<int> seen(role.ops.size(), 0);
  for (std::size_t s = 0; s < role.streams.size(); ++s)
    for (int id : role.streams[s]) {
      FSDP_CHECK(id >= 0 && id < static_cast<int>(role.ops.size()),
                 fmt::format("role {}: stream {} lists op {} out of range", role_index, s, id));
      FSDP_CHECK(ops[std::size_t(id)].stream == s,
                 fmt::format("role {}: op {} listed on stream {} but runs on {}", role_index,
                             op_label(role.ops[id], id), s, stream_name(role.ops[id].stream)));
      ++seen[id];
    }
  for (std::size_t i = 0; i < role.ops.size(); ++i)
    FSDP_CHECK(seen[i] == 1, fmt::format("role {}: op {} is listed {} times in the streams", role_index,
                                         op_label(role.ops[i], int(i)), seen[i]));
}

RoleData role_data(const StepProgram& program, int role_index, const EngineOptions& options) {
  const RoleProgram& role = program.roles[std::size_t(role_index)];
  check_memory_effects(role.resident, [&] { return fmt::format("role {} resident", role_index); });
  const int n = static_cast<int>(role.ops.size());
  RoleData rd;
  rd.ops.reserve(role.ops.size());
  rd.effects.reserve(role.ops.size() * 2);
  rd.dep_counts.reserve(role.ops.size());
  std::vector<int> succ_count(role.ops.size() + 1, 0);
  // Every op's dependencies, flat (deps_begin[i] .. deps_begin[i + 1]): the successor lists are built
  // from them without a second pass over the program's ops.
  std::vector<int> deps, deps_begin;
  deps.reserve(role.ops.size() * 2);
  deps_begin.reserve(role.ops.size() + 1);
  for (int i = 0; i < n; ++i) {
    const Op& op = role.ops[i];
    const auto label = [&] { return fmt::format("op {}", op_label(op, i)); };
    check_memory_effects(op.alloc_at_start, label);
    check_memory_effects(op.free_at_end, label);
    for (int d : op.deps) {
      FSDP_CHECK(d >= 0 && d < n && d != i, fmt::format("op {}: dependency {} out of range", op_label(op, i), d));
      ++succ_count[d];
    }
    deps_begin.push_back(int(deps.size()));
    deps.insert(deps.end(), op.deps.begin(), op.deps.end());
    rd.dep_counts.push_back(int(op.deps.size()));
    rd.ops.push_back(op_data(op, i, options));
    OpData& od = rd.ops.back();
    od.alloc_begin = int(rd.effects.size());
    rd.effects.insert(rd.effects.end(), op.alloc_at_start.begin(), op.alloc_at_start.end());
    od.free_begin = int(rd.effects.size());
    rd.effects.insert(rd.effects.end(), op.free_at_end.begin(), op.free_at_end.end());
    od.free_end = int(rd.effects.size());
    od.released_bytes = released_param_bytes(program, op);
  }
  deps_begin.push_back(int(deps.size()));
  check_streams(role, role_index, rd.ops);
  // Successor lists in CSR form, each in increasing op order.
  int offset = 0;
  for (int i = 0; i < n; ++i) {
    rd.ops[i].succ_begin = rd.ops[i].succ_end = offset;
    offset += succ_count[i];
  }
  rd.succ.resize(offset);
  rd.succ_stream.resize(offset);
  for (int i = 0; i < n; ++i)
    for (int k = deps_begin[std::size_t(i)]; k < deps_begin[std::size_t(i) + 1]; ++k) {
      const int d = deps[std::size_t(k)];
      rd.succ_stream[rd.ops[d].succ_end] = rd.ops[i].stream;
      rd.succ[rd.ops[d].succ_end++] = i;
    }
  return rd;
}

// Until the step ends some phase is running at least at 1/kStreamCount: a started collective shares its
// fabric with at most kStreamCount others, and compute slows only while collectives are resident (which then
// progress). So the step lasts at most (all instances' work) x kStreamCount; that bound must fit the clock.
// `work_ns` sums every op's work, role after role (build_roles adds each role while its data is fresh).
void check_step_fits(double work_ns) {
  const double slowest_rate = 1.0 / kStreamCount;
  if (!(work_ns / slowest_rate <= kMaxStepNs))
    step_too_long(fmt::format("the step's ops take up to {:.3g} s in all", work_ns / slowest_rate / kNsPerS));
}

}  // namespace

void check_rendezvous_member(const StepProgram& program, const std::vector<RoleData>& roles, std::size_t r,
                             std::size_t k) {
  const auto& members = program.rendezvous[r];
  FSDP_CHECK(members.size() >= 2, fmt::format("rendezvous {} has fewer than two members", r));
  const OpRef& m = members[k];
  FSDP_CHECK(m.role >= 0 && m.role < static_cast<int>(roles.size()) && m.op >= 0 &&
                 m.op < static_cast<int>(roles[std::size_t(m.role)].ops.size()),
             fmt::format("rendezvous {} names an op out of range", r));
  FSDP_CHECK(roles[std::size_t(m.role)].ops[std::size_t(m.op)].rendezvous == static_cast<int>(r),
             fmt::format("op {} of role {} is in rendezvous {} but does not name it",
                         op_label(program.roles[m.role].ops[m.op], m.op), m.role, r));
  for (std::size_t j = 0; j < k; ++j)
    FSDP_CHECK(members[j].role != m.role, fmt::format("rendezvous {} has two ops of role {}", r, m.role));
}

std::vector<RoleData> build_roles(const StepProgram& program, const EngineOptions& options) {
  std::vector<RoleData> roles;
  double work_ns = 0;
  int first_instance = 0, first_rank = 0;
  for (std::size_t r = 0; r < program.roles.size(); ++r) {
    const RoleProgram& role = program.roles[r];
    FSDP_CHECK(role.role_ranks >= 1, fmt::format("role {}: role_ranks must be >= 1", r));
    // Pipeline ranks (roles) each run on a copy of the mesh; rendezvous pair their instances one to one.
    FSDP_CHECK(!options.expand_ranks || role.role_ranks == program.mesh.size(),
               fmt::format("role {}: expanded mode needs role_ranks ({}) == mesh size ({})", r,
                           role.role_ranks, program.mesh.size()));
    RoleData rd = role_data(program, static_cast<int>(r), options);
    rd.first_instance = first_instance;
    rd.instances = options.expand_ranks ? role.role_ranks : 1;
    rd.first_rank = first_rank;
    first_instance += rd.instances;
    first_rank += role.role_ranks;
    for (const OpData& od : rd.ops) work_ns += (double(od.latency_ns) + od.work_ns) * rd.instances;
    roles.push_back(std::move(rd));
  }
  check_step_fits(work_ns);
  return roles;
}

}  // namespace fsdpx::engine_detail
