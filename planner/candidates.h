// planner/candidates.h — the planner's bookkeeping around the simulator: a cache of evaluated plans
// keyed by everything the simulator reads (identical plans are simulated once), the objective's
// ordering, and one-line descriptions of candidates. Leaves out the search order (search.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/planner.h"
#include "simulator/steady_state.h"

namespace fsdpx {

// True when `a` should be preferred to `b`: fitting plans first, then the objective (throughput:
// tokens/s per GPU, then less memory; memory: less peak memory, then throughput), then the label
// so that ties break the same way on every run.
bool better(const Candidate& a, const Candidate& b, Objective objective);

// "hsdp 2x4 tp 2": the parallel shape, the family an alternative stands for.
std::string family_of(const Plan& plan);
// "dp_shard 8 tp 2, mb 1, per_block k1, recompute none, prefetch 1, ag cap 2, reduce fp32".
std::string describe(const Plan& plan, const std::string& wrapping);
// Everything the simulator reads except the model and cluster (fixed for one search); without
// `with_recompute`, all of it but the recompute pattern (the configured plan).
std::string plan_key(const Plan& plan, bool with_recompute = true);

// evaluate_plan (planner.h) with a pipelined plan's probes run or not by `start` (simulator/periodic_probe.h);
// `like_plan_start` gets whether those of a like plan (another recompute pattern) run. With
// StageBubbles::computed a pipelined plan keeps its stages' figures (Candidate::pipeline), at the cost of
// per-op records where it is simulated whole.
Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label,
                        StageBubbles bubbles, const ProbeStart& start, ProbeStart& like_plan_start);
// What pipelining does in a simulated pipelined plan: bubble, stage peaks and idle fractions.
PipelineReport pipeline_report(const StepTotals& sim);

class Evaluator {
 public:
  Evaluator(double memory_limit_bytes, SearchCounts& counts) : limit_bytes_(memory_limit_bytes), counts_(counts) {}
  // Simulates `plan` unless an identical plan was simulated before. `wrapping_label` names the
  // wrapping in the description ("per_block k2", "fsdp1 1e8", "simplefsdp"). A pipelined plan is
  // simulated whole at once where none of the probes of the last like plan simulated (the same configured
  // plan with another recompute pattern) repeated within the step: the refinement simulates families of
  // such plans (issue 36: five members of the 405B pp 32 interleaved x2 shape at 32 nodes each probed
  // 256, and three of them 512, of 1,024 micro-batches in vain). Per Evaluator, never shared: one plan's
  // outcome is no fact about another shape or micro-batch count.
  Candidate run(Plan plan, WrapPolicy wrapping, const std::string& wrapping_label);
  // Whether plans simulated from now on keep their pipeline figures (evaluate_plan); a plan found in the
  // cache keeps what its first evaluation gave.
  void set_stage_bubbles(StageBubbles bubbles) { bubbles_ = bubbles; }
  const std::vector<Candidate>& all() const { return done_; }
  double limit_bytes() const { return limit_bytes_; }

 private:
  double limit_bytes_;
  SearchCounts& counts_;
  StageBubbles bubbles_ = StageBubbles::skipped;
  std::map<std::string, std::size_t> index_;
  std::vector<Candidate> done_;
  std::map<std::string, ProbeStart> probe_starts_;  // by plan_key without the recompute pattern
};

}  // namespace fsdpx
