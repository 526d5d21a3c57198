// kineto/kineto_trace.cpp — Kineto's JSON (libkineto output_json.cpp: "X" complete events with "cat",
// "ts"/"dur" in microseconds, "args"; "i" instant events for "[memory]"; "distributedInfo" at the top) into
// RankTrace. Events nothing reads (flows, Python frames other than nn.Module, trace metadata) are dropped
// while parsing, so a large trace's JSON tree is never held whole. Leaves out "M" metadata names.
#include "kineto/kineto_trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "kineto/trace_file.h"

namespace fsdpx {

namespace {

using json = nlohmann::json;

std::int64_t ns_of_us(const json& v) { return v.is_number() ? std::llround(v.get<double>() * 1000.0) : 0; }

std::int64_t int_or(const json& o, const char* key, std::int64_t fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->is_number()) return std::llround(it->get<double>());
  return fallback;
}

std::string string_or(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<NcclArgs> nccl_args(const json& args) {
  if (!args.is_object() || !args.contains("Collective name")) return std::nullopt;
  NcclArgs n;
  n.collective = string_or(args, "Collective name");
  n.in_nelems = int_or(args, "In msg nelems", -1);
  n.out_nelems = int_or(args, "Out msg nelems", -1);
  n.group_size = int(int_or(args, "Group size", 0));
  n.dtype = string_or(args, "dtype");
  n.pg_name = string_or(args, "Process Group Name");
  n.pg_desc = string_or(args, "Process Group Description");
  n.pg_ranks = string_or(args, "Process Group Ranks");
  n.seq = int_or(args, "Seq", -1);
  return n;
}

// Events no reader needs: flow arrows and Python frames other than module annotations.
bool dropped(const json& e) {
  const std::string ph = string_or(e, "ph");
  if (ph == "s" || ph == "f" || ph == "t") return true;
  return string_or(e, "cat") == "python_function" && !string_or(e, "name").starts_with("nn.Module: ");
}

json parse_trace(const std::string& path) {
  const std::string text = read_trace_text(path);
  const json::parser_callback_t keep = [](int depth, json::parse_event_t event, json& parsed) {
    return !(depth == 2 && event == json::parse_event_t::object_end && dropped(parsed));
  };
  try {
    return json::parse(text, keep);
  } catch (const json::exception& e) {
    const auto* pe = dynamic_cast<const json::parse_error*>(&e);
    throw ConfigError(pe ? fmt::format("{}: invalid JSON at byte {} (truncated or malformed trace)", path, pe->byte)
                         : fmt::format("{}: invalid JSON ({})", path, e.what()));
  }
}

GpuEvent gpu_event(const json& e, GpuActivity activity) {
  const json& args = e.contains("args") ? e["args"] : json::object();
  GpuEvent g;
  g.name = string_or(e, "name");
  g.activity = activity;
  g.device = int(int_or(args, "device", int_or(e, "pid", 0)));
  g.stream = int_or(args, "stream", int_or(e, "tid", 0));
  g.start_ns = ns_of_us(e.value("ts", json()));
  g.dur_ns = ns_of_us(e.value("dur", json()));
  g.correlation = int_or(args, "correlation", -1);
  g.nccl = nccl_args(args);
  return g;
}

CpuEvent cpu_event(const json& e, CpuKind kind) {
  const json& args = e.contains("args") ? e["args"] : json::object();
  CpuEvent c;
  c.name = string_or(e, "name");
  c.kind = kind;
  c.tid = int_or(e, "tid", 0);
  c.start_ns = ns_of_us(e.value("ts", json()));
  c.dur_ns = ns_of_us(e.value("dur", json()));
  c.correlation = int_or(args, "correlation", -1);
  if (kind == CpuKind::comms) c.nccl = nccl_args(args);
  return c;
}

// "ProfilerStep#N" (HTA's pattern ^ProfilerStep\s*#\s*(\d+), without std::regex: it runs for every event).
std::optional<ProfilerStep> profiler_step(const std::string& name, const json& e) {
  if (!name.starts_with("ProfilerStep")) return std::nullopt;
  std::size_t i = name.find_first_not_of(' ', 12);
  if (i == std::string::npos || name[i] != '#') return std::nullopt;
  i = name.find_first_not_of(' ', i + 1);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  int number = 0;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && number < 100000000; ++i)
    number = number * 10 + (name[i] - '0');
  return ProfilerStep{number, int_or(e, "tid", 0), ns_of_us(e.value("ts", json())), ns_of_us(e.value("dur", json()))};
}

void add_memory_sample(RankTrace& t, const json& e) {
  const json& args = e.contains("args") ? e["args"] : json::object();
  MemoryEvent s;
  s.ts_ns = ns_of_us(e.value("ts", json()));
  s.device = int_or(args, "Device Type", 0) == 0 ? -1 : int(int_or(args, "Device Id", 0));
  s.bytes = int_or(args, "Bytes", 0);
  s.allocated_bytes = int_or(args, "Total Allocated", 0);
  s.reserved_bytes = int_or(args, "Total Reserved", 0);
  t.memory.push_back(s);
}

void add_complete_event(RankTrace& t, const json& e) {
  const std::string cat = string_or(e, "cat"), name = string_or(e, "name");
  if (cat == "kernel") return t.gpu.push_back(gpu_event(e, GpuActivity::kernel));
  if (cat == "gpu_memcpy") return t.gpu.push_back(gpu_event(e, GpuActivity::memcpy));
  if (cat == "gpu_memset") return t.gpu.push_back(gpu_event(e, GpuActivity::memset));
  if (cat == "gpu_user_annotation") return t.gpu_annotations.push_back(gpu_event(e, GpuActivity::kernel));
  if (cat == "cuda_runtime" || cat == "cuda_driver") return t.cpu.push_back(cpu_event(e, CpuKind::launch));
  if (cat == "python_function") return t.cpu.push_back(cpu_event(e, CpuKind::module));
  if (cat != "user_annotation" && cat != "cpu_op") return;
  if (auto step = profiler_step(name, e)) return t.steps.push_back(*step);
  if (cat == "user_annotation") return t.cpu.push_back(cpu_event(e, CpuKind::annotation));
  t.cpu.push_back(cpu_event(e, name == "record_param_comms" ? CpuKind::comms : CpuKind::op));
}

int rank_from_name(const std::string& path) {
  static const std::regex rank_name(R"(rank[-_]?(\d+))");
  std::smatch m;
  const std::string name = std::filesystem::path(path).filename().string();
  return std::regex_search(name, m, rank_name) ? std::stoi(m[1]) : 0;
}

template <class T>
void sort_by_start(std::vector<T>& v) {
  std::stable_sort(v.begin(), v.end(), [](const T& a, const T& b) { return a.start_ns < b.start_ns; });
}

}  // namespace

RankTrace read_kineto_trace(const std::string& path) {
  const json j = parse_trace(path);
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array())
    throw ConfigError(fmt::format("{}: /traceEvents: expected the array of a PyTorch profiler trace", path));
  RankTrace t;
  t.file = path;
  t.rank = rank_from_name(path);
  if (const auto it = j.find("distributedInfo"); it != j.end() && it->is_object() && it->contains("rank")) {
    t.rank = int(int_or(*it, "rank", 0));
    t.world_size = int(int_or(*it, "world_size", 1));
    t.rank_from_trace = true;
  }
  for (const json& e : j["traceEvents"]) {
    if (!e.is_object()) continue;
    const std::string ph = string_or(e, "ph");
    if (ph == "X") add_complete_event(t, e);
    else if (ph == "i" && string_or(e, "name") == "[memory]") add_memory_sample(t, e);
  }
  sort_by_start(t.steps);
  sort_by_start(t.gpu);
  sort_by_start(t.cpu);
  sort_by_start(t.gpu_annotations);
  std::stable_sort(t.memory.begin(), t.memory.end(), [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
  return t;
}

std::vector<RankTrace> read_kineto_traces(const std::string& path) {
  std::vector<RankTrace> ranks;
  for (const std::string& file : trace_files(path)) ranks.push_back(read_kineto_trace(file));
  std::stable_sort(ranks.begin(), ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].rank == ranks[i - 1].rank)
      throw ConfigError(fmt::format("{}: rank {} also traced in {}", ranks[i].file, ranks[i].rank, ranks[i - 1].file));
  return ranks;
}

}  // namespace fsdpx
