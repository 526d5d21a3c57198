// tools/trace_summary.h — `fsdpx compare --trace DIR` without a plan: the measured summary of a user's own
// PyTorch profiler traces (kineto/step_breakdown.h), per rank over the whole trace and per profiled step, as
// text or JSON. Leaves out the plan: tools/trace_comparison.h joins the summary with a simulated step.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kineto/step_breakdown.h"

namespace fsdpx {

nlohmann::json breakdown_json(const TimeBreakdown& b);
nlohmann::json trace_summary_json(const std::string& path, const std::vector<RankBreakdown>& ranks);
std::string trace_summary_text(const std::string& path, const std::vector<RankBreakdown>& ranks);

}  // namespace fsdpx
