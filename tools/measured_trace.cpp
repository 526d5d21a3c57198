// tools/measured_trace.cpp — writes the measured trace with simulator/trace.h and reads it (or a profile)
// back as per-op measurements (see measured_trace.h).
#include "tools/measured_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_reader.h"
#include "executor/checkpoint/checksum.h"
#include "program/lower.h"
#include "simulator/trace.h"
#include "tools/run_report.h"

namespace fsdpx {

namespace {

int first_rank_of_role(const StepProgram& program, int role) {
  int first = 0;
  for (int r = 0; r < role; ++r) first += program.roles[std::size_t(r)].role_ranks;
  return first;
}

std::int64_t earliest_ns(const std::vector<RankTimeline>& ranks) {
  std::int64_t t = std::numeric_limits<std::int64_t>::max();
  for (const RankTimeline& r : ranks) {
    for (const MeasuredOp& o : r.ops) t = std::min(t, o.start_ns);
    for (const MeasuredMemory& m : r.memory) t = std::min(t, m.at_ns);
  }
  return t == std::numeric_limits<std::int64_t>::max() ? 0 : t;
}

nlohmann::json other_data(const StepProgram& program, const std::vector<RankTimeline>& ranks,
                          const MeasuredTraceInfo& info) {
  std::vector<std::int64_t> steps, traced_ranks;
  for (const RankTimeline& r : ranks) {
    traced_ranks.push_back(r.rank);
    for (const MeasuredOp& o : r.ops)
      if (std::find(steps.begin(), steps.end(), o.step + 1) == steps.end()) steps.push_back(o.step + 1);
  }
  std::sort(steps.begin(), steps.end());
  return {{"fsdpx", kMeasuredTraceFormat}, {"backend", info.backend}, {"plan", info.plan_file},
          {"program_hash", program_hash(program)}, {"steps", steps}, {"ranks", traced_ranks}};
}

// Op name -> index per role, for reading a trace back.
std::map<std::pair<int, std::string>, int> op_index(const StepProgram& program) {
  std::map<std::pair<int, std::string>, int> out;
  for (std::size_t r = 0; r < program.roles.size(); ++r)
    for (std::size_t i = 0; i < program.roles[r].ops.size(); ++i) out[{int(r), program.roles[r].ops[i].name}] = int(i);
  return out;
}

int role_of_pid(const StepProgram& program, std::int64_t pid, const std::string& file, const std::string& path) {
  for (int r = 0; r < int(program.roles.size()); ++r) {
    const int first = first_rank_of_role(program, r);
    if (pid >= first && pid < first + program.roles[std::size_t(r)].role_ranks) return r;
  }
  throw_config_error(file, path, fmt::format("pid {} is not a rank of the plan's step program", pid));
}

struct TraceEvent {
  std::int64_t pid = 0, step = 0;
  std::string name;
  double ts_s = 0, dur_s = 0;
};

TraceEvent read_op_event(const nlohmann::json& e, const std::string& file, const std::string& path) {
  JsonObject o(e, file, path);
  TraceEvent t;
  t.pid = o.integer("pid");
  t.name = o.string("name");
  t.ts_s = o.non_negative_number("ts") * 1e-6;
  t.dur_s = o.non_negative_number("dur") * 1e-6;
  JsonObject args = o.object("args");
  t.step = args.integer("step");
  return t;
}

std::vector<TraceEvent> read_op_events(JsonObject& top, const StepProgram& program) {
  if (!top.has("otherData"))
    top.fail("otherData", "missing: not a trace of fsdpx run --trace (a simulated trace? compare simulates the plan "
                          "itself; give it the measured run)");
  JsonObject meta = top.object("otherData");
  if (!top.raw("otherData").contains("fsdpx") || meta.string("fsdpx") != kMeasuredTraceFormat)
    meta.fail("fsdpx", fmt::format("expected \"{}\": not a trace of fsdpx run --trace (compare simulates the plan "
                                   "itself; give it the measured run)", kMeasuredTraceFormat));
  const std::string hash = meta.string("program_hash");
  if (hash != program_hash(program))
    meta.fail("program_hash", fmt::format("{}: measured with another step program than the plan's ({}): a run of "
                                          "another plan", hash, program_hash(program)));
  std::vector<TraceEvent> out;
  for (const auto& [e, path] : top.array("traceEvents")) {
    if (!e->is_object()) throw_config_error(top.file(), path, "expected an object, got " + json_type_name(*e));
    if (e->value("ph", "") == "X") out.push_back(read_op_event(*e, top.file(), path));
  }
  if (out.empty()) throw_config_error(top.file(), "/traceEvents", "no op events (\"ph\":\"X\")");
  return out;
}

// Mean over the steps (after the first of several) of the span from a step's first op start to its
// last op end on any traced rank.
double mean_step_span_s(const std::vector<TraceEvent>& events, std::int64_t skip_step) {
  std::map<std::int64_t, std::pair<double, double>> span;
  for (const TraceEvent& e : events) {
    if (e.step == skip_step) continue;
    auto [it, fresh] = span.try_emplace(e.step, e.ts_s, e.ts_s + e.dur_s);
    it->second.first = std::min(it->second.first, e.ts_s);
    it->second.second = std::max(it->second.second, e.ts_s + e.dur_s);
  }
  double sum = 0;
  for (const auto& [step, s] : span) sum += s.second - s.first;
  return span.empty() ? 0 : sum / double(span.size());
}

OpMeasurement measurement_of_trace(JsonObject& top, const StepProgram& program) {
  const std::vector<TraceEvent> events = read_op_events(top, program);
  std::set<std::int64_t> steps, pids;
  for (const TraceEvent& e : events) steps.insert(e.step), pids.insert(e.pid);
  const std::int64_t skip = steps.size() > 1 ? *steps.begin() : -1;
  const auto index = op_index(program);
  OpMeasurement m;
  m.file = top.file();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    const std::string path = fmt::format("/traceEvents/{}", i);
    const int role = role_of_pid(program, e.pid, top.file(), path);
    if (!index.count({role, e.name}))
      throw_config_error(top.file(), path, fmt::format("op '{}' is not in the plan's step program", e.name));
    if (e.step != skip) m.op_time_s[{role, e.name}].push_back(e.dur_s);
  }
  m.step_time_s = mean_step_span_s(events, skip);
  m.steps = int(steps.size()) - (skip < 0 ? 0 : 1);
  m.ranks = int(pids.size());
  return m;
}

// A `fsdpx run --profile` file: rank 0's op times summed over its steps.
OpMeasurement measurement_of_profile(JsonObject& top, const StepProgram& program) {
  const Plan plan = parse_plan(top.raw("plan"), top.file());
  const std::string hash = program_hash(lower(plan));
  if (hash != program_hash(program))
    top.fail("plan", fmt::format("lowers to another step program than the plan's (hash {}, the plan's {}): a run of "
                                 "another plan", hash, program_hash(program)));
  OpMeasurement m;
  m.file = top.file();
  m.steps = int(top.positive_integer("steps"));
  m.ranks = 1;
  m.step_time_s = top.positive_number("step_time_s");
  JsonObject ops = top.object("op_time_s");
  for (const auto& [name, v] : top.raw("op_time_s").items()) {
    if (!v.is_number() || v.get<double>() < 0) ops.fail(name, "expected a number >= 0");
    ops.ignore(name);
    m.op_time_s[{0, name}].push_back(v.get<double>() / m.steps);
  }
  for (const char* key : {"format", "backend", "step_times_s", "kernel_time_s", "kernel_calls", "collective_time_s",
                          "collective_calls", "skipped_steps", "loss_scales"})
    top.ignore(key);
  return m;
}

}  // namespace

std::string program_hash(const StepProgram& program) {
  std::string text;
  for (const RoleProgram& role : program.roles) {
    text += fmt::format("role {}\n", role.role_ranks);
    for (const Op& op : role.ops)
      text += fmt::format("{}|{}|{}|{}\n", op.name, op_kind_name(op.kind), stream_name(op.stream), op.comm_bytes);
  }
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string measured_trace_json(const StepProgram& program, const std::vector<RankTimeline>& ranks,
                                const MeasuredTraceInfo& info) {
  const std::int64_t origin = earliest_ns(ranks);
  TraceTimeline t;
  for (const RankTimeline& r : ranks) {
    for (const MeasuredOp& o : r.ops) {
      t.ops.push_back(OpTiming{r.role, r.mesh_rank, o.op, o.start_ns - origin, o.end_ns - origin});
      t.op_steps.push_back(o.step + 1);
    }
    for (const MeasuredMemory& m : r.memory) t.memory.push_back(MemorySample{r.role, r.mesh_rank, m.at_ns - origin, m.bytes});
  }
  t.other_data = other_data(program, ranks, info).dump();
  std::ostringstream out;
  write_chrome_trace(program, t, out);
  return out.str();
}

OpMeasurement load_measurement(const std::string& path, const StepProgram& program) {
  const nlohmann::json j = load_json_file(path);
  if (!j.is_object()) throw_config_error(path, "", "expected a JSON object, got " + json_type_name(j));
  JsonObject top(j, path);
  OpMeasurement m;
  if (j.contains("traceEvents")) {
    m = measurement_of_trace(top, program);
    top.ignore("displayTimeUnit");
  } else if (j.contains("format") && j["format"] == kProfileFormat) {
    m = measurement_of_profile(top, program);
  } else {
    throw_config_error(path, "", fmt::format("neither a trace of fsdpx run --trace nor a profile (\"format\": \"{}\")",
                                             kProfileFormat));
  }
  top.finish();
  return m;
}

}  // namespace fsdpx
