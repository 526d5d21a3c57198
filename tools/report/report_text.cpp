// tools/report/report_text.cpp — `fsdpx report`'s terminal output: one table per sweep and one for the
// wrapping policies, numbers rounded for reading (the JSON and CSV carry them exact), out-of-memory rows
// marked in the status column and listed under the table with their peak against the capacity.
#include <fmt/format.h>

#include "planner/whatif.h"
#include "tools/format.h"
#include "tools/report/report_page.h"

namespace fsdpx {

namespace {

std::string status_text(RowStatus s) {
  return s == RowStatus::ok ? "ok" : s == RowStatus::out_of_memory ? "OUT OF MEMORY" : "not simulated";
}

std::vector<std::string> row_cells(const WhatIfRow& r, const std::optional<double>& train_tokens) {
  const RowStatus status = row_status(r);
  std::vector<std::string> c{r.label, r.world_size > 0 ? fmt::format("{}", r.world_size) : "-",
                             r.global_batch > 0 ? fmt::format("{}", r.global_batch) : "-"};
  if (status == RowStatus::error) {
    c.insert(c.end(), {"-", "-", "-", "-", "-", "-", status_text(status)});
    if (train_tokens) c.push_back("-");
    return c;
  }
  const PointMetrics& m = r.metrics;
  c.insert(c.end(), {seconds(m.step_time_s), human_count(m.tokens_per_s_per_gpu), human_count(cluster_tokens_per_s(r)),
                     fmt::format("{:.1f}%", 100 * m.mfu), seconds(m.exposed_comm_s), gib(m.peak_memory_total_bytes),
                     status_text(status)});
  if (train_tokens) c.push_back(human_duration(*time_to_train_s(r, *train_tokens)));
  return c;
}

std::string rows_text(const std::vector<WhatIfRow>& rows, const char* first, const std::optional<double>& train_tokens) {
  std::vector<std::vector<std::string>> t{{first, "GPUs", "global batch", "step time", "tokens/s/GPU", "cluster tokens/s",
                                           "MFU", "exposed comm", "peak memory", "status"}};
  if (train_tokens) t.front().push_back(fmt::format("time for {} tokens", human_count(*train_tokens)));
  std::string notes;
  for (const WhatIfRow& r : rows) {
    t.push_back(row_cells(r, train_tokens));
    if (row_status(r) == RowStatus::error) notes += fmt::format("  {}: not simulated: {}\n", r.label, r.error);
    if (row_status(r) == RowStatus::out_of_memory)
      notes += fmt::format("  {}: out of memory: peak {} per GPU, above the {} capacity\n", r.label,
                           gib(r.metrics.peak_memory_total_bytes), gib(r.memory_capacity_bytes));
  }
  return table(t) + notes;
}

}  // namespace

std::string report_text(const ReportPage& page) {
  std::string out = page.title + "\n";
  if (page.base_plan) out += fmt::format("base plan: {}\n", plan_shape_desc(*page.base_plan));
  for (const ReportSweep& s : page.sweeps) {
    out += fmt::format("\nwhat-if points, {} scaling ({}):\n", scaling_name(s.scaling), sweep_caption(page, s));
    out += rows_text(s.rows, "point", page.train_tokens);
  }
  if (!page.wrappings.empty())
    out += "\nwrapping policies on the base plan:\n" + rows_text(page.wrappings, "wrapping", page.train_tokens);
  return out;
}

}  // namespace fsdpx
