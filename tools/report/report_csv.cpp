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

}  // namespace

std::string report_csv(const std::vector<WhatIfAxis>& axes, const std::vector<WhatIfRow>& rows) {
  std::string out;
  for (const WhatIfAxis& a : axes) out += std::string(whatif_param_name(a.param)) + ",";
  out += "label,status,step_time_s,tokens_per_s_per_gpu,mfu,exposed_comm_s,peak_memory_bytes";
  for (int c = 0; c < kMemCategoryCount; ++c) out += fmt::format(",peak_{}_bytes", mem_category_name(MemCategory(c)));
  out += ",plan\n";
  for (const WhatIfRow& r : rows) {
    for (const WhatIfAxis& a : axes) out += setting_text(r.point, a.param) + ",";
    out += csv_field(r.label) + ",";
    if (!r.error.empty()) {
      out += csv_field(fmt::format("error: {}", r.error));
      out += std::string(6 + kMemCategoryCount, ',');
      out += '\n';
      continue;
    }
    const PointMetrics& m = r.metrics;
    out += fmt::format("ok,{},{},{},{},{}", m.step_time_s, m.tokens_per_s_per_gpu, m.mfu, m.exposed_comm_s,
                       m.peak_memory_total_bytes);
    for (double b : m.peak_memory_bytes) out += fmt::format(",{}", b);
    out += ',';
    out += csv_field(r.plan_desc);
    out += '\n';
  }
  return out;
}

}  // namespace fsdpx
