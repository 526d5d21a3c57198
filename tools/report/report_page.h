// tools/report/report_page.h — what `fsdpx report` shows, whatever the format: the sweeps (weak and/or
// strong scaling) with each row's status against the GPU memory limit, cluster throughput and time to
// train a token budget; rendered as text (numbers rounded for people), JSON (exact) or HTML/CSV
// (report_html.h). Leaves out cost (GPU-hours priced): a cluster config has no price.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "planner/whatif.h"
#include "simulator/simulate.h"

namespace fsdpx {

struct ReportSweep {
  Scaling scaling = Scaling::weak;
  std::vector<WhatIfRow> rows;  // one per point, grid order
};

struct ReportPage {
  std::string title;   // "llama3.1-8b on dgx-h100"
  std::string source;  // how the points were obtained ("re-simulated plan P", "re-planned per point")
  std::vector<WhatIfAxis> axes;
  std::vector<ReportSweep> sweeps;    // weak, strong, or both (weak first)
  std::vector<WhatIfRow> wrappings;   // the base plan under the three wrapping policies (may be empty)
  const Plan* base_plan = nullptr;    // the plan whose step the first two charts show
  const Simulation* base_sim = nullptr;  // its simulation, with per-op times and memory samples
  std::optional<double> train_tokens;    // --train-tokens: the budget whose training time rows show
};

// ok: simulated and within the memory capacity; out_of_memory: simulated, peak above the capacity
// (the run would fail); error: not simulated (WhatIfRow::error says why).
enum class RowStatus { ok, out_of_memory, error };
RowStatus row_status(const WhatIfRow& r);
const char* row_status_name(RowStatus s);  // "ok", "out_of_memory", "error"
// Tokens per step over step time, whole cluster; 0 for rows not simulated.
double cluster_tokens_per_s(const WhatIfRow& r);
// Seconds to train `tokens` at the row's cluster throughput; empty without a throughput.
std::optional<double> time_to_train_s(const WhatIfRow& r, double tokens);

// What each axis means, for captions and chart axes ("node count (8 GPUs per node)").
std::string axis_title(WhatIfParam p, const Plan* base);
// The caption of a sweep: what was varied, what was kept (per-GPU or global batch), what a gap means.
std::string sweep_caption(const ReportPage& page, const ReportSweep& sweep);

// The terminal report: tables with rounded numbers, out-of-memory rows marked, reasons listed.
std::string report_text(const ReportPage& page);
// Every number exact (bytes, seconds, tokens/s); schema "fsdpx-report/1".
nlohmann::json report_json(const ReportPage& page);

}  // namespace fsdpx
