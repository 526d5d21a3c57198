// tools/report/report_rows.cpp — per-row facts of the report (status against the memory capacity,
// cluster tokens/s, time to train) and the words for what a sweep varied and kept.
#include <algorithm>

#include <fmt/format.h>

#include "tools/report/report_page.h"

namespace fsdpx {

RowStatus row_status(const WhatIfRow& r) {
  if (!r.error.empty()) return RowStatus::error;
  if (r.memory_capacity_bytes > 0 && r.metrics.peak_memory_total_bytes > r.memory_capacity_bytes)
    return RowStatus::out_of_memory;
  return RowStatus::ok;
}

const char* row_status_name(RowStatus s) {
  switch (s) {
    case RowStatus::ok: return "ok";
    case RowStatus::out_of_memory: return "out_of_memory";
    case RowStatus::error: return "error";
  }
  return "error";
}

double cluster_tokens_per_s(const WhatIfRow& r) {
  if (!r.error.empty() || r.metrics.step_time_s <= 0) return 0;
  return double(r.global_batch) * double(r.seq) / r.metrics.step_time_s;
}

std::optional<double> time_to_train_s(const WhatIfRow& r, double tokens) {
  const double rate = cluster_tokens_per_s(r);
  if (rate <= 0) return std::nullopt;
  return tokens / rate;
}

std::string axis_title(WhatIfParam p, const Plan* base) {
  switch (p) {
    case WhatIfParam::nodes:
      return base ? fmt::format("node count ({} GPUs per node)", base->cluster.gpus_per_node) : "node count";
    case WhatIfParam::inter_node_gbit: return "inter-node bandwidth per GPU (Gbit/s, one direction)";
    case WhatIfParam::seq: return "sequence length (tokens)";
    case WhatIfParam::ep: return "expert-parallel degree (ep)";
  }
  return "";
}

std::string sweep_caption(const ReportPage& page, const ReportSweep& sweep) {
  if (page.axes.empty()) return "No --vary given: the base point only.";
  const WhatIfAxis& first = page.axes.front();
  std::string values;
  for (double v : first.values) values += fmt::format("{}{:g}", values.empty() ? "" : ", ", v);
  std::string out = fmt::format("x: {} = {}", axis_title(first.param, page.base_plan), values);
  if (page.axes.size() > 1) {
    out += "; one line per value of";
    for (std::size_t i = 1; i < page.axes.size(); ++i)
      out += fmt::format("{} {}", i == 1 ? "" : ",", whatif_param_name(page.axes[i].param));
  }
  const bool nodes_vary = std::any_of(page.axes.begin(), page.axes.end(),
                                      [](const WhatIfAxis& a) { return a.param == WhatIfParam::nodes; });
  if (nodes_vary)
    out += sweep.scaling == Scaling::strong
               ? ". Strong scaling: the global batch stays, each GPU gets a smaller share as GPUs are added"
               : ". Weak scaling: each GPU keeps its batch, the global batch grows with the GPUs";
  return out;
}

}  // namespace fsdpx
