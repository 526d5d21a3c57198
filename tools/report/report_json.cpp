// tools/report/report_json.cpp — `fsdpx report --format json`: the sweeps and wrapping rows with every
// number exact (seconds, bytes, tokens/s as the simulator computed them), each row's status against the
// memory capacity, and the cluster throughput and time to train when a token budget is given.
#include "tools/report/report_page.h"

namespace fsdpx {

namespace {

nlohmann::json row_json(const WhatIfRow& r, const std::optional<double>& train_tokens) {
  nlohmann::json j{{"label", r.label}, {"status", row_status_name(row_status(r))}};
  nlohmann::json point = nlohmann::json::object();
  for (const auto& [param, v] : r.point.settings) point[whatif_param_name(param)] = v;
  j["point"] = point;
  if (r.world_size > 0) {
    j["world_size"] = r.world_size;
    j["global_batch"] = r.global_batch;
    j["seq"] = r.seq;
    j["memory_capacity_bytes"] = r.memory_capacity_bytes;
  }
  if (row_status(r) == RowStatus::error) {
    j["error"] = r.error;
    return j;
  }
  const PointMetrics& m = r.metrics;
  j["plan"] = r.plan_desc;
  j["step_time_s"] = m.step_time_s;
  j["tokens_per_s_per_gpu"] = m.tokens_per_s_per_gpu;
  j["cluster_tokens_per_s"] = cluster_tokens_per_s(r);
  j["mfu"] = m.mfu;
  j["exposed_comm_s"] = m.exposed_comm_s;
  j["peak_memory_bytes"] = m.peak_memory_total_bytes;
  nlohmann::json by_category = nlohmann::json::object();
  for (int c = 0; c < kMemCategoryCount; ++c) by_category[mem_category_name(MemCategory(c))] = m.peak_memory_bytes[std::size_t(c)];
  j["peak_memory_by_category_bytes"] = by_category;
  if (train_tokens) j["time_to_train_s"] = *time_to_train_s(r, *train_tokens);
  return j;
}

nlohmann::json rows_json(const std::vector<WhatIfRow>& rows, const std::optional<double>& train_tokens) {
  nlohmann::json out = nlohmann::json::array();
  for (const WhatIfRow& r : rows) out.push_back(row_json(r, train_tokens));
  return out;
}

}  // namespace

nlohmann::json report_json(const ReportPage& page) {
  nlohmann::json j{{"schema", "fsdpx-report/1"}, {"title", page.title}, {"source", page.source}};
  if (page.base_plan) j["base_plan"] = plan_shape_desc(*page.base_plan);
  if (page.train_tokens) j["train_tokens"] = *page.train_tokens;
  nlohmann::json axes = nlohmann::json::array();
  for (const WhatIfAxis& a : page.axes) axes.push_back({{"name", whatif_param_name(a.param)}, {"values", a.values}});
  j["axes"] = axes;
  nlohmann::json sweeps = nlohmann::json::array();
  for (const ReportSweep& s : page.sweeps)
    sweeps.push_back({{"scaling", scaling_name(s.scaling)}, {"rows", rows_json(s.rows, page.train_tokens)}});
  j["sweeps"] = sweeps;
  j["wrappings"] = rows_json(page.wrappings, page.train_tokens);
  return j;
}

}  // namespace fsdpx
