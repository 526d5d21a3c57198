// planner/whatif.h — what-if sweeps for `fsdpx report`: a grid of points over nodes, per-GPU inter-node
// bandwidth and sequence length; a point re-sizes a plan (re-simulate) or a plan request (re-plan).
// Resizing keeps tp, cp, pp and the per-GPU batch; data-parallel degrees absorb the change of world
// size; weak scaling keeps the per-GPU batch (the global batch grows), strong scaling keeps the global
// batch (the per-GPU batch shrinks). Leaves out what-ifs on the GPU or model (a different GPU is a
// different cluster config).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "planner/planner.h"
#include "simulator/simulate.h"

namespace fsdpx {

// nodes: node count; inter_node_gbit: achievable inter-node bandwidth per GPU, one direction, in
// Gbit/s (dgx-h100's 8 x 48 GB/s NICs for 8 GPUs read as 384); seq: tokens per sequence; ep: expert-parallel
// degree of a mixture-of-experts model (core/expert_parallel.h; a plan's ep replaced, a request's fixed).
enum class WhatIfParam { nodes, inter_node_gbit, seq, ep };
const char* whatif_param_name(WhatIfParam p);

// What a change of GPU count keeps: weak scaling the sequences per data-parallel rank, strong scaling
// the sequences per step (the global batch).
enum class Scaling { weak, strong };
const char* scaling_name(Scaling s);  // "weak", "strong"

struct WhatIfAxis {
  WhatIfParam param = WhatIfParam::nodes;
  std::vector<double> values;  // in the order given
};

// "nodes=1,2,4,8" -> axis. Strict: unknown names, empty lists, non-positive or (for nodes and seq)
// fractional values throw ConfigError "command line: --vary: ...".
WhatIfAxis parse_whatif_axis(const std::string& spec);

struct WhatIfPoint {
  std::vector<std::pair<WhatIfParam, double>> settings;  // one per axis, axis order
  std::string label() const;  // "nodes=2 seq=8192", or "base" without settings
};

// Cartesian product, the first axis outermost; no axes gives one point without settings. Throws
// ConfigError when an axis is given twice.
std::vector<WhatIfPoint> whatif_grid(const std::vector<WhatIfAxis>& axes);

// The cluster at a point: nodes replaced, inter-node NIC bandwidth set so that nics_per_node x
// nic_bw equals gbit x 1e9 / 8 x gpus_per_node. Throws ConfigError when the cluster has no inter-node
// fabric but the point needs one.
ClusterSpec whatif_cluster(ClusterSpec c, const WhatIfPoint& point);

// The plan at a point (validated; `predicted` cleared; ep replaced where the point sets it). With the node count changed, the
// data-parallel degree becomes world / (tp x cp x pp): dp_shard takes it, except under HSDP where
// dp_shard stays and dp_replicate takes the rest (HSDP with one replica becomes full shard). Weak: the
// global batch scales with the data-parallel degree so the per-GPU batch and gradient accumulation
// stay. Strong: the global batch stays; the micro-batch becomes the largest divisor of the new
// per-rank batch not above the old one, and gradient accumulation takes the rest. Throws ConfigError
// naming the point when the plan cannot be resized.
Plan whatif_plan(const Plan& base, const WhatIfPoint& point, Scaling scaling = Scaling::weak);
// The request at a point: cluster as whatif_cluster, seq replaced; weak: global batch scaled with the
// GPU count relative to `base.cluster` (same sequences per GPU); strong: global batch kept.
PlanRequest whatif_request(const PlanRequest& base, const WhatIfPoint& point, Scaling scaling = Scaling::weak);

// What the report shows of one simulated plan.
struct PointMetrics {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  double peak_memory_total_bytes = 0;
  std::array<double, kMemCategoryCount> peak_memory_bytes{};  // MemCategory order, headroom in other
};
PointMetrics point_metrics(const Simulation& sim);
PointMetrics point_metrics(const CandidateMetrics& m);

struct WhatIfRow {
  WhatIfPoint point;
  std::string label;      // the point's label, or a plan's name for side-by-side rows
  std::string error;      // non-empty: the point could not be simulated (why)
  std::string plan_desc;  // short description of the plan at this point
  PointMetrics metrics;
  // The shape of the point (0 when the point could not be resized): GPUs, sequences and tokens per step.
  int world_size = 0;
  std::int64_t global_batch = 0;
  std::int64_t seq = 0;
  double memory_capacity_bytes = 0;  // per GPU: the GPU's HBM, or the request's memory limit
};

// Re-simulates `base` at every point; a point that cannot hold the plan becomes a row with `error`. A
// plan whose peak exceeds the GPU's memory is still simulated (the report marks it).
std::vector<WhatIfRow> sweep_plan(const Plan& base, const std::vector<WhatIfPoint>& points,
                                  Scaling scaling = Scaling::weak);
// Re-plans at every point (search_plans, best plan); no fitting plan becomes a row with `error`.
std::vector<WhatIfRow> sweep_request(const PlanRequest& base, const std::vector<WhatIfPoint>& points,
                                     Scaling scaling = Scaling::weak);

// The plan's units replaced by each of the three wrapping policies of planner/wrapping.h (per-block
// with one block per unit, FSDP1 size-based at 1e8 parameters, SimpleFSDP auto), each simulated: the
// side-by-side rows of the report. Everything but the units stays.
std::vector<WhatIfRow> compare_wrappings(const Plan& plan);

// One-line description of a plan's shape: "dp_shard 8, tp 1, mb 2, ga 1, 34 units, recompute none".
std::string plan_shape_desc(const Plan& p);

}  // namespace fsdpx
