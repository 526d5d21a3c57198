// tools/report/report_html.h — `fsdpx report`'s outputs: one self-contained HTML page (inline CSS and SVG, no
// script, no external URL) with the four charts and the tables, and a CSV with one row per point.
// Leaves out interactivity: every number is also in a table or a tooltip.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/whatif.h"
#include "simulator/simulate.h"

namespace fsdpx {

struct ReportPage {
  std::string title;   // "llama3.1-8b on dgx-h100"
  std::string source;  // how the points were obtained ("re-simulated plan P", "re-planned per point")
  std::vector<WhatIfAxis> axes;
  std::vector<WhatIfRow> rows;        // one per point, grid order
  std::vector<WhatIfRow> wrappings;   // the base plan under the three wrapping policies (may be empty)
  const Plan* base_plan = nullptr;    // the plan whose step the first two charts show
  const Simulation* base_sim = nullptr;  // its simulation, with per-op times and memory samples
};

// Figure ids: fig-memory-step, fig-stream-timeline, fig-sweep, fig-memory-breakdown.
std::string report_html(const ReportPage& page);

// Header: the varied parameters (one column each), label, status, step_time_s, tokens_per_s_per_gpu,
// mfu, exposed_comm_s, peak_memory_bytes and peak_<category>_bytes; then one line per row. A failed
// point has status "error: ..." and empty metrics. Fields with commas or quotes are quoted (RFC 4180).
std::string report_csv(const std::vector<WhatIfAxis>& axes, const std::vector<WhatIfRow>& rows);

}  // namespace fsdpx
