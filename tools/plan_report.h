// tools/plan_report.h — how a plan search is shown: the JSON of `fsdpx plan --format json`
// ({"plan", "alternatives", "pareto", "search"}) and the text summary (the chosen plan, its memory at
// the peak, the top-K table with what differs and why each alternative lost, the Pareto frontier on
// request). Shared by commands that plan.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/planner.h"

namespace fsdpx {

nlohmann::json candidate_json(const Candidate& c);  // label, wrapping, metrics, fits, lost_because
nlohmann::json plan_search_json(const PlanResult& res);
// The chosen plan, its memory, and the top-K alternatives as what differs from it; `pareto` adds the Pareto
// frontier (throughput against peak memory), one line per plan.
std::string plan_search_text(const PlanResult& res, int top_k, bool pareto = false);
// The message of NoPlanFits: the request (the model and cluster as given, their names and sizes, seq and
// global batch), the bound that failed (the memory limit), the least memory any plan needs, and what would
// make it fit.
std::string no_fit_message(const PlanResult& res, const PlanRequest& r, const std::string& model_input,
                           const std::string& cluster_input);

}  // namespace fsdpx
