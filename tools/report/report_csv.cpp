// tools/report/report_csv.cpp — the what-if rows as CSV (RFC 4180 quoting), numbers in fmt's shortest
// round-trip form so a spreadsheet reads back exactly what the simulator computed.
#include <fmt/format.h>

#include "tools/report/report_html.h"

namespace fsdpx {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string setting_text(const WhatIfPoint& p, WhatIfParam param) {
  for (const auto& [k, v] : p.settings)
    if (k == param) return fmt::format("{}", v);
  return "";
}

std::string shape_fields(const WhatIfRow& r) {
  if (r.world_size <= 0) return ",,";
  return fmt::format("{},{},{}", r.world_size, r.global_batch, r.seq);
}

std::string metric_fields(const WhatIfRow& r, const std::optional<double>& train_tokens) {
  constexpr int kFields = 9 + kMemCategoryCount;  // step time .. memory capacity, categories, plan
  if (row_status(r) == RowStatus::error) return std::string(kFields, ',');
  const PointMetrics& m = r.metrics;
  std::string out = fmt::format(",{},{},{},{},{},{},{},{}", m.step_time_s, m.tokens_per_s_per_gpu,
                                cluster_tokens_per_s(r), train_tokens ? fmt::format("{}", *time_to_train_s(r, *train_tokens)) : "",
                                m.mfu, m.exposed_comm_s, m.peak_memory_total_bytes, r.memory_capacity_bytes);
  for (double b : m.peak_memory_bytes) out += fmt::format(",{}", b);
  return out + "," + csv_field(r.plan_desc);
}

}  // namespace

std::string report_csv(const ReportPage& page) {
  std::string out;
  for (const WhatIfAxis& a : page.axes) out += std::string(whatif_param_name(a.param)) + ",";
  out += "scaling,label,status,world_size,global_batch,tokens_per_sequence,step_time_s,tokens_per_s_per_gpu,cluster_tokens_per_s,"
         "time_to_train_s,mfu,exposed_comm_s,peak_memory_bytes,memory_capacity_bytes";
  for (int c = 0; c < kMemCategoryCount; ++c) out += fmt::format(",peak_{}_bytes", mem_category_name(MemCategory(c)));
  out += ",plan,error\n";
  for (const ReportSweep& s : page.sweeps)
    for (const WhatIfRow& r : s.rows) {
      for (const WhatIfAxis& a : page.axes) out += setting_text(r.point, a.param) + ",";
      out += fmt::format("{},{},{},{}", scaling_name(s.scaling), csv_field(r.label), row_status_name(row_status(r)),
                         shape_fields(r));
      out += metric_fields(r, page.train_tokens) + "," + csv_field(r.error) + "\n";
    }
  return out;
}

}  // namespace fsdpx
