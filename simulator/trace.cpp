// simulator/trace.cpp — writes the Chrome Trace Event Format by hand with fixed formatting:
// timestamps are integer ns printed as microseconds with three decimals (exact), doubles with fmt's
// shortest round-trip form, events in the order of the engine result (itself deterministic), process
// and thread metadata first in (rank, stream) order. Leaves out flow (dependency) events.
#include "simulator/trace.h"

#include <cmath>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Integer ns as microseconds, the unit of "ts" and "dur", without rounding.
std::string micros(TimeNs ns) {
  FSDP_CHECK(ns >= 0, "negative time in trace");
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

std::string number(double x) {
  FSDP_CHECK(std::isfinite(x), "non-finite number in trace");
  return fmt::format("{}", x);
}

int global_rank(const StepProgram& program, int role, int rank) {
  int first = 0;
  for (int r = 0; r < role; ++r) first += program.roles[r].role_ranks;
  return first + rank;
}

class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out) : out_(out) {}
  void event(const std::string& body) {
    out_ << (first_ ? "\n" : ",\n") << "{" << body << "}";
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

void write_metadata(const StepProgram& program, const std::vector<OpTiming>& ops,
                    const std::vector<MemorySample>& memory, TraceWriter& w) {
  std::set<std::pair<int, int>> ranks;  // ordered: (role, rank)
  for (const OpTiming& t : ops) ranks.insert({t.role, t.rank});
  for (const MemorySample& m : memory) ranks.insert({m.role, m.rank});
  // A role is a pipeline stage (pipeline rank) when there are several: one process per stage, so the
  // bubble shows as gaps between stages. Threads are the streams the role uses.
  const char* role_word = program.roles.size() > 1 ? "stage" : "role";
  for (const auto& [role, rank] : ranks) {
    const int pid = global_rank(program, role, rank);
    w.event(fmt::format(R"("name":"process_name","ph":"M","pid":{},"tid":0,"args":{{"name":"{} {} rank {}"}})",
                        pid, role_word, role, rank));
    w.event(fmt::format(R"("name":"process_sort_index","ph":"M","pid":{},"tid":0,"args":{{"sort_index":{}}})",
                        pid, pid));
    const RoleProgram& rp = program.roles[std::size_t(role)];
    for (int s = 0; s < kStreamCount; ++s)
      if (s == 0 || (std::size_t(s) < rp.streams.size() && !rp.streams[std::size_t(s)].empty()))
        w.event(fmt::format(R"("name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}})", pid,
                            s, stream_name(static_cast<StreamKind>(s))));
  }
}

double op_flops(const StepProgram& program, const Op& op) {
  if (op.work_set < 0) return 0;
  FSDP_CHECK(op.work_set < static_cast<int>(program.work_sets.size()), "op names no work set");
  return program.work_sets[op.work_set].flops();
}

// HBM bytes of a memory-bound compute op (the loss scaler's unscale pass).
double op_hbm_bytes(const StepProgram& program, const Op& op) {
  if (op.work_set < 0) return 0;
  double bytes = 0;
  for (const KernelWork& k : program.work_sets[std::size_t(op.work_set)].kernels) bytes += k.bytes;
  return bytes;
}

std::string op_args(const StepProgram& program, const Op& op) {
  std::string args = fmt::format(R"("kind":"{}","unit":{},"micro_batch":{})", op_kind_name(op.kind), op.unit,
                                 op.micro_batch);
  switch (op.kind) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce: return args + R"(,"bytes":)" + number(op.comm_bytes);
    case OpKind::send:
    case OpKind::recv:
      return args + fmt::format(R"(,"stage":{},"peer_stage_rank":{},"bytes":)", op.stage, op.peer_role) +
             number(op.comm_bytes);
    case OpKind::forward:
    case OpKind::backward:
    case OpKind::backward_input:
    case OpKind::backward_weight:
    case OpKind::optimizer: return args + R"(,"flops":)" + number(op_flops(program, op));
    case OpKind::unscale: return args + R"(,"bytes":)" + number(op_hbm_bytes(program, op));
    case OpKind::free: return args;
  }
  return args;
}

// `steps`: empty, or the step of each op (an extra "step" argument).
void write_ops(const StepProgram& program, const std::vector<OpTiming>& ops, const std::vector<std::int64_t>& steps,
               TraceWriter& w) {
  FSDP_CHECK(steps.empty() || steps.size() == ops.size(), "trace: one step per op");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpTiming& t = ops[i];
    FSDP_CHECK(t.role >= 0 && std::size_t(t.role) < program.roles.size() && t.op >= 0 &&
                   std::size_t(t.op) < program.roles[t.role].ops.size(), "trace: op outside the program");
    const Op& op = program.roles[t.role].ops[t.op];
    const std::string step = steps.empty() ? "" : fmt::format(R"(,"step":{})", steps[i]);
    w.event(fmt::format(R"("name":{},"cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}{}}})",
                        json_string(op.name), op_kind_name(op.kind), global_rank(program, t.role, t.rank),
                        static_cast<int>(op.stream), micros(t.start_ns), micros(t.end_ns - t.start_ns),
                        op_args(program, op), step));
  }
}

// One "C" event per sample; each category is one series of the rank's "memory_GiB" counter track.
void write_memory(const StepProgram& program, const std::vector<MemorySample>& memory, TraceWriter& w) {
  for (const MemorySample& m : memory) {
    std::string series;
    for (int c = 0; c < kMemCategoryCount; ++c)
      series += fmt::format(R"({}"{}":{})", c == 0 ? "" : ",", mem_category_name(static_cast<MemCategory>(c)),
                            number(m.by_category[c] / kBytesPerGiB));
    w.event(fmt::format(R"("name":"memory_GiB","ph":"C","pid":{},"tid":0,"ts":{},"args":{{{}}})",
                        global_rank(program, m.role, m.rank), micros(m.at_ns), series));
  }
}

void write_trace(const StepProgram& program, const std::vector<OpTiming>& ops, const std::vector<std::int64_t>& steps,
                 const std::vector<MemorySample>& memory, const std::string& other_data, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ns\",";
  if (!other_data.empty()) out << "\"otherData\":" << other_data << ",";
  out << "\"traceEvents\":[";
  TraceWriter w(out);
  write_metadata(program, ops, memory, w);
  write_ops(program, ops, steps, w);
  write_memory(program, memory, w);
  out << "\n]}\n";
}

}  // namespace

void write_chrome_trace(const StepProgram& program, const EngineResult& result, std::ostream& out) {
  write_trace(program, result.ops, {}, result.memory_samples, "", out);
}

void write_chrome_trace(const StepProgram& program, const TraceTimeline& timeline, std::ostream& out) {
  write_trace(program, timeline.ops, timeline.op_steps, timeline.memory, timeline.other_data, out);
}

}  // namespace fsdpx
