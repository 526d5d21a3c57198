// tools/report/report_charts.h — the four SVG charts of `fsdpx report`: memory over one step by category, a
// per-stream timeline of one step, throughput / peak memory against the varied parameter, and a peak
// memory breakdown bar per plan. Each returns one <svg> element with a fixed id. Sub-pixel detail is
// merged so a chart stays a few thousand elements whatever the model size.
#pragma once

#include <string>
#include <vector>

#include "planner/whatif.h"
#include "tools/report/report_page.h"
#include "simulator/simulate.h"

namespace fsdpx {

// Stacked live bytes by category of rank 0 (role 0) over the step (needs record_ops). id "svg-memory-step".
std::string chart_memory_over_step(const Simulation& sim);
// One row per stream of rank 0 (role 0), one rect per op coloured by kind. id "svg-stream-timeline".
std::string chart_stream_timeline(const Simulation& sim);

enum class SweepMetric { tokens_per_s_per_gpu, cluster_tokens_per_s, peak_memory };
// x: the first axis's values (evenly spaced, in the order given), named `x_name`; one line per
// combination of the other axes' values (the legend wraps to the chart's width); failed points leave a
// gap; points over their memory capacity carry a red cross (class "oom-mark"). The memory chart draws
// the capacity as a dashed line. `id` is the <svg>'s id.
std::string chart_sweep(const std::vector<WhatIfRow>& rows, SweepMetric metric, const std::string& id,
                        const std::string& x_name);
// One horizontal stacked bar per row (failed rows drawn empty with the reason, rows over their capacity
// labelled OUT OF MEMORY), with the capacity as a dashed line. id "svg-memory-breakdown".
std::string chart_memory_breakdown(const std::vector<WhatIfRow>& rows);

}  // namespace fsdpx
