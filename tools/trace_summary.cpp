// tools/trace_summary.cpp — prints what kineto/step_breakdown.cpp measured: one row per rank (whole trace)
// and per profiled step, then the collectives by kind and process group. Times in seconds in JSON, with
// units in the text. Leaves out the kernel-by-kernel table HTA's get_gpu_kernel_breakdown also gives.
#include "tools/trace_summary.h"

#include <fmt/format.h>

#include "tools/format.h"

namespace fsdpx {

nlohmann::json breakdown_json(const TimeBreakdown& b) {
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveTime& c : b.collectives)
    collectives.push_back({{"kind", c.kind}, {"group", c.group}, {"count", c.count}, {"time_s", c.time_s},
                           {"bytes", c.bytes}});
  return {{"gpu_events", b.events},
          {"span_s", b.span_s},
          {"compute_s", b.compute_s},
          {"communication_s", b.communication_s},
          {"exposed_communication_s", b.exposed_communication_s},
          {"memory_s", b.memory_s},
          {"idle_s", b.idle_s},
          {"kernel_sum_s",
           {{"compute", b.compute_kernel_sum_s}, {"communication", b.communication_kernel_sum_s},
            {"memory", b.memory_kernel_sum_s}}},
          {"collectives", collectives}};
}

nlohmann::json trace_summary_json(const std::string& path, const std::vector<RankBreakdown>& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (const RankBreakdown& r : ranks) {
    nlohmann::json steps = nlohmann::json::array();
    for (const StepBreakdown& s : r.steps) {
      nlohmann::json j = breakdown_json(s.gpu);
      j["step"] = s.step;
      j["cpu_step_s"] = s.cpu_step_s;
      steps.push_back(j);
    }
    out.push_back({{"rank", r.rank}, {"file", r.file}, {"last_step_excluded", r.last_step_excluded},
                   {"whole", breakdown_json(r.whole)}, {"steps", steps}});
  }
  return {{"trace", path},
          {"definitions", "HolisticTraceAnalysis's temporal breakdown: compute = union of compute kernels, "
                          "communication = union of NCCL kernels, exposed = communication while no compute kernel "
                          "runs, idle = no GPU activity between the first and last kernel"},
          {"ranks", out}};
}

namespace {

std::vector<std::string> row(const std::string& what, const TimeBreakdown& b) {
  return {what, seconds(b.span_s), seconds(b.compute_s), seconds(b.communication_s),
          seconds(b.exposed_communication_s), seconds(b.idle_s), fmt::format("{}", b.events)};
}

}  // namespace

std::string trace_summary_text(const std::string& path, const std::vector<RankBreakdown>& ranks) {
  std::vector<std::vector<std::string>> rows{
      {"rank / step", "GPU span", "compute", "communication", "exposed comm", "idle", "GPU events"}};
  std::vector<std::vector<std::string>> comms{{"rank", "collective", "group", "count", "time", "bytes"}};
  for (const RankBreakdown& r : ranks) {
    rows.push_back(row(fmt::format("rank {}{}", r.rank, r.last_step_excluded ? " (last step left out)" : ""), r.whole));
    for (const StepBreakdown& s : r.steps) rows.push_back(row(fmt::format("  step {}", s.step), s.gpu));
    for (const CollectiveTime& c : r.whole.collectives)
      comms.push_back({fmt::format("{}", r.rank), c.kind, c.group.empty() ? "-" : c.group, fmt::format("{}", c.count),
                       seconds(c.time_s), c.bytes > 0 ? fmt::format("{:.4g} MB", c.bytes / 1e6) : "-"});
  }
  return fmt::format("measured: {} ({} rank{})\n", path, ranks.size(), ranks.size() == 1 ? "" : "s") + table(rows) +
         "collectives (whole trace):\n" + table(comms) +
         "compute, communication: unions of kernel intervals; exposed: communication while no compute kernel runs "
         "(HolisticTraceAnalysis's definitions)\n";
}

}  // namespace fsdpx
