// planner/ep_degrees.h — expert parallelism in the planner's search: the ep degrees a shape admits (every
// ep that core/expert_parallel.h accepts: divides the routed experts and dp_shard x cp, a multiple of cp),
// which targets train mixture-of-experts blocks (torchtitan >= 0.2's expert_parallel_degree; an fsdpx
// backend whose capability row says expert_parallel), and the refusal of an MoE request on any other
// target. Its own file so that the search's speed work and this enumeration stay apart. Leaves out expert
// tensor parallelism (etp = tp, torchtitan's default); the search bounds each ep degree's shapes by their
// compute stream (planner/shape_bound.h) like any other shape.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "planner/planner.h"

namespace fsdpx {

// Candidate ep for `par` (its dp_shard and cp read; its ep ignored), capped at `max_ep` (0: no cap).
std::vector<int> ep_degrees(const ModelSpec& m, const Parallelism& par, int max_ep = 0);

// True when `t` on `cluster` trains routed experts over ep > 1 ranks: torchtitan's releases (job config
// parallelism.expert_parallel_degree, tests/data/torchtitan/job_config_0.2.*.json), or the fsdpx backend's
// row (core/backend_capabilities.h expert_parallel).
bool target_runs_expert_parallel(const Target& t, const ClusterSpec& cluster);

// The ep values the search tries for `par`: ep_degrees, narrowed to the request's fixed ep (--ep); {1} for
// a dense model.
std::vector<int> searched_ep_degrees(const PlanRequest& r, const Parallelism& par);

// ConfigError "<file>: <path>: model <name>: <why>" when the planner cannot plan `r`: what the simulator
// does not model (core/model_spec_moe.h), or an MoE model on a target that does not train its experts.
void refuse_unplanned_request(const PlanRequest& r, const std::string& file, const std::string& path);

// A floor on one rank's compute time per step for an MoE plan, for the search's throughput bound beside the
// compute stream's passes (estimate() times dense models only): the causal model FLOPs of its tokens (6 N_active plus
// 3 L H (d_qk + d_v) T per token, cost_models/moe_params.h with the attention term halved for the causal
// mask) at the GPU's peak, no communication. A bound, not an estimate: real kernels never reach peak.
double moe_compute_floor_s(const Plan& p);

}  // namespace fsdpx
