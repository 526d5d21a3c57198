// planner/planner.h — `fsdpx plan`'s search: enumerate parallel shapes (dp_replicate x dp_shard x tp x
// cp), micro-batch sizes, recompute, wrapping (per-block k, FSDP1 size-based, SimpleFSDP greedy),
// reshard_after_forward, prefetch depth, all-gather cap and reduce dtype; prune with an analytic
// memory lower bound and an estimate() throughput bound; simulate the survivors; keep the Pareto
// frontier of throughput vs peak memory. Deterministic: no wall-clock cutoffs. Leaves out pipeline
// parallelism (pp = 1 until the pipeline issue lands) and CPU offload.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/plan.h"

namespace fsdpx {

enum class Objective { throughput, memory };
// How the planner grouped modules into FSDP units (planner/wrapping_*.h).
enum class WrapPolicy { per_block, fsdp1_size_based, simplefsdp_auto };

const char* objective_name(Objective o);
const char* wrap_policy_name(WrapPolicy w);  // "per_block", "fsdp1_size_based", "simplefsdp_auto"

// Knobs that bound the search (defaults: the full space the issue lists, bounded for speed).
struct SearchSpace {
  bool allow_tp = true;
  bool allow_cp = true;
  bool allow_hsdp = true;
  std::vector<std::int64_t> micro_batches;    // empty: every divisor of the per-rank batch up to 16
  std::vector<int> blocks_per_unit = {1, 2, 4};
  std::vector<RecomputeMode> recompute_modes = {RecomputeMode::none, RecomputeMode::selective,
                                                RecomputeMode::selective_op, RecomputeMode::full};
  std::vector<double> fsdp1_min_params = {1e7, 1e8};  // FSDP1 size_based_auto_wrap_policy thresholds
  bool try_simplefsdp_auto = true;
  std::vector<int> prefetch_depths = {1, 2};
  std::vector<int> all_gather_caps = {1, 2, 4};  // Prefetch::max_all_gathers_in_flight
  std::vector<DType> reduce_dtypes = {DType::fp32, DType::bf16};
  int shapes_to_simulate = 24;  // parallel shapes (with micro-batch, recompute) simulated in stage 1
  int shapes_to_refine = 3;     // best stage-1 shapes refined locally in stage 2
};

struct PlanRequest {
  ModelSpec model;
  ClusterSpec cluster;  // already sized (nodes, gpus_per_node)
  std::int64_t seq = 2048;
  std::int64_t global_batch = 8;  // sequences per optimizer step
  std::optional<double> memory_limit_bytes;  // default: the GPU's HBM
  Objective objective = Objective::throughput;
  int top_k = 5;
  SearchSpace space;
  // The training stack the plans are predicted for (core/framework.h): by default torchtitan in eager
  // mode, the stack `fsdpx export` writes a configuration for.
  Framework framework = Framework::torchtitan;
  bool compiled = false;
};

struct CandidateMetrics {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  double compute_s = 0;  // compute-stream busy time (forward + backward + optimizer)
  double peak_memory_bytes = 0;
  std::array<double, 6> peak_memory_by_category_bytes{};  // MemCategory order, headroom in "other"
};

struct Candidate {
  Plan plan;  // predicted and notes filled
  WrapPolicy wrapping = WrapPolicy::per_block;
  std::string label;  // short description, e.g. "dp_shard 8, mb 2, per-block x1, recompute none"
  CandidateMetrics metrics;
  bool fits = false;
  std::string lost_because;  // empty for the chosen plan
};

struct SearchCounts {
  std::int64_t considered = 0;      // candidates enumerated (shapes and local variants)
  std::int64_t pruned_memory = 0;   // memory lower bound above the limit
  std::int64_t pruned_bound = 0;    // throughput bound below the beam / best found
  std::int64_t simulated = 0;       // distinct plans run through the simulator
  std::int64_t reused = 0;          // identical plans answered from the cache
};

struct PlanResult {
  std::optional<Candidate> best;  // absent when nothing fits
  std::vector<Candidate> top;     // best first, up to top_k, excluding `best`
  std::vector<Candidate> pareto;  // fitting candidates not dominated in (throughput, peak memory)
  SearchCounts counts;
  double memory_limit_bytes = 0;
  double least_memory_needed_bytes = 0;  // least peak any plan needs (simulated or bound)
  std::vector<std::string> suggestions;  // what would make it fit (when nothing fits)
};

// Progress in [0, 1]; for display only (never changes the result).
using ProgressFn = std::function<void(double fraction)>;

PlanResult search_plans(const PlanRequest& request, const ProgressFn& progress = {});

// Simulates one plan and fills its metrics, `predicted` and `fits` against `memory_limit_bytes`.
Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label);

// Thrown by the CLI when no plan fits: main prints the message and exits 2.
struct NoPlanFits : ConfigError {
  using ConfigError::ConfigError;
};

}  // namespace fsdpx
