// planner/results.h — turning the simulated candidates into the planner's answer: the chosen plan
// with its notes, the top alternatives with why each lost, the Pareto frontier of throughput against
// peak memory, and, when nothing fits, the least memory any plan needs and what would make it fit.
#pragma once

#include <vector>

#include "planner/memory_bound.h"
#include "planner/planner.h"

namespace fsdpx {

// Why `c` lost to `best` under the objective ("out of memory: ...", "exposed communication: ...").
std::string lost_because(const Candidate& c, const Candidate& best, Objective objective, double limit_bytes);
// Fitting candidates not dominated in (tokens/s per GPU up, peak memory down), by increasing memory.
std::vector<Candidate> pareto_frontier(const std::vector<Candidate>& all);
// Fills best, top, pareto and the notes from `all` (sorted best first by the objective).
void finish_result(PlanResult& res, std::vector<Candidate> all, const PlanRequest& r);
// When nothing fits: what would (more GPUs by the memory bound of `least`, recompute, micro-batch).
std::vector<std::string> fit_suggestions(const PlanRequest& r, const Plan& least, const MemoryBound& bound,
                                         double least_peak_bytes);

}  // namespace fsdpx
