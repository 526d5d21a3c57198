// planner/results.h — turning the simulated candidates into the planner's answer: the chosen plan (the
// fastest fitting one, or within the throughput tolerance of it the one with most headroom) with its
// notes and planner record, one alternative per other family (parallel shape), then distinct strategies,
// each with why it lost, and the Pareto frontier of throughput against peak memory.
#pragma once

#include <string>
#include <vector>

#include "planner/planner.h"

namespace fsdpx {

// Why `c` lost to `chosen`: out of memory, or slower (by exposed communication or compute), or within the
// tolerance but with less headroom; a throughput difference below 0.05% is called a tie, not a loss.
std::string lost_because(const Candidate& c, const Candidate& chosen, const PlanRequest& r, const PlanResult& res);
// Fitting candidates not dominated in (tokens/s per GPU up, peak memory down), by increasing memory.
std::vector<Candidate> pareto_frontier(const std::vector<Candidate>& all);
// Fills best, top, pareto, fastest_tokens_per_s_per_gpu and the notes from `all`.
void finish_result(PlanResult& res, std::vector<Candidate> all, const PlanRequest& r);

}  // namespace fsdpx
