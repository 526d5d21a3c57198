// tools/cmd_explain_memory.cpp — `fsdpx explain-memory --plan P [--format text|json]`: why a plan needs
// the memory it does: the op and micro-batch at the simulated peak, the live bytes by category then, and
// the changes that would fit the GPU, each simulated (simulator/memory_explain.h). Its peak is the device
// total (core/memory_metric.h), with PyTorch's allocated and reserved figures at the same moment.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/memory_metric.h"
#include "simulator/memory_explain.h"
#include "tools/cli_names.h"
#include "tools/cmd_explain_memory.h"
#include "tools/main_output.h"

namespace fsdpx {
namespace {

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

std::string explanation_text(const MemoryExplanation& e) {
  std::string s = fmt::format("peak {:.2f} GiB of {:.2f} GiB ({}) at op {}", gib(e.peak_bytes), gib(e.capacity_bytes),
                              e.peak_bytes <= e.capacity_bytes ? "fits" : "out of memory", e.peak_op);
  s += fmt::format(" [{}; PyTorch would report allocated {:.2f} GiB, reserved {:.2f} GiB]",
                   memory_metric::kDeviceMeaning, gib(e.peak_allocated_bytes), gib(e.peak_reserved_bytes));
  s += e.peak_micro_batch >= 0 ? fmt::format(", micro-batch {}", e.peak_micro_batch) : "";
  s += fmt::format(", pipeline rank {}\nlive at the peak:\n", e.peak_stage);
  for (int k = 0; k < kMemCategoryCount; ++k)
    s += fmt::format("  {:<12} {:8.2f} GiB\n", mem_category_name(MemCategory(k)), gib(e.peak_by_category[std::size_t(k)]));
  s += "changes (each simulated; fitting ones first, fastest first):\n";
  for (const MemoryChange& c : e.changes)
    s += fmt::format("  {} {:<70} peak {:7.2f} GiB  step {:.3f} s ({:+.1f}%)\n", c.fits ? "fits" : "  - ", c.what,
                     gib(c.peak_bytes), c.step_time_s, 100 * (c.step_time_s / e.step_time_s - 1));
  if (e.changes.empty()) s += "  none applies\n";
  return s;
}

nlohmann::json explanation_json(const MemoryExplanation& e) {
  nlohmann::json j;
  j["capacity_bytes"] = e.capacity_bytes;
  j["peak_bytes"] = e.peak_bytes;
  j["peak_metric"] = memory_metric::kDevice;
  j["peak_allocated_bytes"] = e.peak_allocated_bytes;
  j["peak_reserved_bytes"] = e.peak_reserved_bytes;
  j["peak_op"] = e.peak_op;
  j["peak_micro_batch"] = e.peak_micro_batch;
  j["peak_stage"] = e.peak_stage;
  for (int k = 0; k < kMemCategoryCount; ++k)
    j["peak_by_category_bytes"][mem_category_name(MemCategory(k))] = e.peak_by_category[std::size_t(k)];
  j["changes"] = nlohmann::json::array();
  for (const MemoryChange& c : e.changes)
    j["changes"].push_back({{"change", c.what}, {"fits", c.fits}, {"peak_bytes", c.peak_bytes},
                            {"peak_metric", memory_metric::kDevice}, {"step_time_s", c.step_time_s}});
  return j;
}

}  // namespace

void run_explain_memory(const ExplainMemoryOptions& o) {
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  const MemoryExplanation e = with_errors_naming(path, "plan", [&] { return explain_memory(plan); });
  emit_main_output(o.out, o.format == OutputFormat::json ? explanation_json(e).dump(2) + "\n" : explanation_text(e));
}

}  // namespace fsdpx
