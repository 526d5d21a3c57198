// planner/planner.h — `fsdpx plan`'s search: parallel shapes (dp_replicate x dp_shard x tp x cp x pp, with
// the pipeline schedule and its chunks per rank) with micro-batch sizes, each bounded (memory lower bound,
// throughput upper bound with the least recompute that could fit) and refined best-bound-first while it
// could still win: wrapping (per-block k, FSDP1 size-based, SimpleFSDP greedy), reshard_after_forward,
// prefetch depth, all-gather cap, reduce dtype and recompute (uniform, or full on some blocks). The space
// is what the target runs (fsdpx's executor or a torchtitan release) and what the user allowed (bf16
// reduction); a plan fits when its peak leaves the memory margin free; within a throughput tolerance of
// the fastest, the plan with most headroom wins. Deterministic: no wall-clock cutoffs. Leaves out CPU
// offload and V-shaped pipeline schedules.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/plan.h"
#include "planner/target.h"

namespace fsdpx {

enum class Objective { throughput, memory };
// How the planner grouped modules into FSDP units (planner/wrapping_*.h).
enum class WrapPolicy { per_block, fsdp1_size_based, simplefsdp_auto };

const char* objective_name(Objective o);
const char* wrap_policy_name(WrapPolicy w);  // "per_block", "fsdp1_size_based", "simplefsdp_auto"

// Degrees the user fixed (0: searched), `fsdpx plan --pp N --pp-schedule S --tp T ...`.
struct FixedDegrees {
  int dp_replicate = 0, dp_shard = 0, tp = 0, cp = 0, pp = 0, vpp = 0, ep = 0;
  std::optional<PipelineSchedule> pp_schedule;
};

// Knobs that narrow the search (defaults: the whole space; the target and the request narrow it further,
// planner/space.h).
struct SearchSpace {
  bool allow_tp = true;
  bool allow_cp = true;
  bool allow_hsdp = true;
  bool allow_pp = true;
  // Pipeline schedules searched when pp > 1 (GPipe keeps every micro-batch in flight for 1F1B's bubble:
  // never better, so only when asked for) and interleaved 1F1B's chunks per rank.
  std::vector<PipelineSchedule> pp_schedules = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b,
                                                PipelineSchedule::zero_bubble};
  std::vector<int> vpp_choices = {2, 4};
  FixedDegrees fixed;
  std::vector<std::int64_t> micro_batches;    // empty: every divisor of the per-rank batch up to 16
  std::vector<int> blocks_per_unit = {1, 2, 4};
  bool merge_embedding_head = true;           // per-block variants with the embedding / head merged
  std::vector<double> fsdp1_min_params = {1e7, 1e8};  // FSDP1 size_based_auto_wrap_policy thresholds
  bool try_simplefsdp_auto = true;
  bool try_no_reshard = true;                 // reshard_after_forward false (ZeRO-2)
  bool try_node_reshard = true;               // FSDP2's int form: reshard to the ranks of one node
  std::vector<int> prefetch_depths = {1, 2};
  std::vector<int> all_gather_caps = {2, 1, 4};  // Prefetch::max_all_gathers_in_flight, FSDP2's first
  std::vector<DType> reduce_dtypes = {DType::fp32, DType::bf16};  // bf16 only with allow_bf16_reduce
  std::vector<RecomputeMode> uniform_recompute = {RecomputeMode::none, RecomputeMode::selective,
                                                  RecomputeMode::selective_op, RecomputeMode::full};
  bool partial_recompute = true;              // full recompute on some blocks (which: the target's rule)
};

// Memory kept free by default: 10% of capacity. The simulated peak already carries the allocator's 10%
// reserve on the bytes a step allocates and frees (cost_models/memory.cpp); what it leaves out is fragmentation beyond that (GMLake, arXiv:2401.08156:
// 15% on average without defragmentation, up to 33%), NCCL buffers growing with channels and communicators
// (NVIDIA/nccl #864: ~1.6 GB for one communicator, ~6 GB for three, against 1 GB modelled) and the
// prediction error of the model itself: on an 80 GiB GPU, 8 GiB.
inline constexpr double kDefaultMemoryMarginFraction = 0.10;
// Plans within this fraction of the fastest count as equally fast, and the one with most headroom wins:
// below the spread of repeated runs and of the model's own error (docs/validation.md).
inline constexpr double kDefaultThroughputTolerance = 0.005;

// Sequences per step a request may ask for (2^30): far above any published batch, far below overflow of
// tokens per step.
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t(1) << 30;

struct PlanRequest {
  ModelSpec model;
  ClusterSpec cluster;  // already sized (nodes, gpus_per_node)
  std::int64_t seq = 2048;
  std::int64_t global_batch = 8;  // sequences per optimizer step
  std::optional<double> memory_limit_bytes;   // capacity per GPU; default: the GPU's HBM
  std::optional<double> memory_margin_bytes;  // kept free; default: kDefaultMemoryMarginFraction x capacity
  double throughput_tolerance = kDefaultThroughputTolerance;
  bool allow_bf16_reduce = false;  // numerics: gradients are reduced in fp32 unless the user allows bf16
  Target target;                   // what will run the plan: fsdpx's executor or a torchtitan release
  Objective objective = Objective::throughput;
  int top_k = 5;
  SearchSpace space;
  // The training stack whose costs the plans are predicted with (core/framework.h); empty: the target's
  // own (request_framework).
  std::optional<Framework> framework;
  bool compiled = false;
  // LoRA fine-tuning (core/lora.h): every plan trains adapters on a frozen base (tp = pp = 1).
  std::optional<LoraSettings> lora;
  // fp16 mixed precision: every plan computes in fp16 with the default dynamic loss scaling
  // (core/loss_scale.h), its unscale pass in the step program; check_fp16_target says where it runs.
  bool fp16 = false;
  // fp8 linear GEMMs (core/fp8.h) in every plan; check_fp8_target says which targets train with it.
  std::optional<Fp8Settings> fp8;
};

struct CandidateMetrics {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  double compute_s = 0;  // compute-stream busy time (forward + backward + optimizer)
  double compute_floor_s = 0;  // compute ops at full rate, summed: no overlap or wrapping beats it
  double peak_memory_bytes = 0;
  std::array<double, 6> peak_memory_by_category_bytes{};  // MemCategory order, headroom in "other"
};

// What pipelining does in the chosen plan (from one simulation of it with records): the share of the step
// the stages' compute streams wait for other stages, and each stage's peak memory.
struct PipelineReport {
  double bubble_fraction = 0;
  std::vector<double> stage_peak_memory_bytes;
  std::vector<double> stage_idle_fraction;
};

struct Candidate {
  Plan plan;  // predicted and notes filled
  WrapPolicy wrapping = WrapPolicy::per_block;
  std::string label;  // short description, e.g. "dp_shard 8, mb 2, per-block x1, recompute none"
  CandidateMetrics metrics;
  bool fits = false;  // peak within capacity minus margin
  std::string lost_because;  // empty for the chosen plan
  // A pipelined plan evaluated by the search proper: its stages' figures from that simulation (with records
  // where it ran whole), which the pipeline report reads instead of simulating the chosen plan again.
  std::optional<PipelineReport> pipeline;
};

struct SearchCounts {
  std::int64_t considered = 0;      // shape x micro-batch x recompute choices bounded, plus refinements simulated
  std::int64_t pruned_memory = 0;   // memory lower bound above the limit
  std::int64_t pruned_bound = 0;    // in shapes whose throughput bound could not beat the best found
  std::int64_t simulated = 0;       // distinct plans run through the simulator
  std::int64_t reused = 0;          // identical plans answered from the cache
  std::int64_t shapes_refined = 0;  // parallel shapes x micro-batch refined (their bound could still win)
};

struct PlanResult {
  std::optional<Candidate> best;  // absent when nothing fits
  std::vector<Candidate> top;     // up to top_k: the best of each other family (shape), then strategies
  std::vector<Candidate> pareto;  // fitting candidates not dominated in (throughput, peak memory)
  SearchCounts counts;
  double memory_capacity_bytes = 0;
  double memory_margin_bytes = 0;
  double memory_limit_bytes = 0;  // what a plan may use: capacity minus margin
  double fastest_tokens_per_s_per_gpu = 0;  // of any fitting plan (the chosen one is within the tolerance)
  double least_memory_needed_bytes = 0;  // least peak any plan needs (simulated or bound)
  std::vector<std::string> suggestions;  // what would make it fit (when nothing fits)
  std::optional<PipelineReport> pipeline;         // when the chosen plan has pp > 1
  std::optional<Candidate> best_without_pipeline;  // the best simulated plan with pp = 1, for comparison
};

// Progress in [0, 1]; for display only (never changes the result).
using ProgressFn = std::function<void(double fraction)>;

PlanResult search_plans(const PlanRequest& request, const ProgressFn& progress = {});

// Whether any plan of a throughput request reaches `floor_tps` tokens/s per GPU, and its choice if so: the
// search of search_plans with the floor standing for a plan already found, so that every shape whose bound
// is at or below it is pruned, without alternatives, families or the no-fit report. Returns the plan the
// tolerance chooses among those simulated (at least the floor), or none. The plan hint's question
// (tools/plan_hint.h); a memory-objective request gets search_plans' answer.
std::optional<Candidate> search_plan_above(const PlanRequest& request, double floor_tps);

// The stack a request's plans assume: its framework, else the target's (fsdpx's executor, or torchtitan).
Framework request_framework(const PlanRequest& request);

// Simulates one plan (steady state extrapolated, simulator/steady_state.h) and fills its metrics,
// `predicted` and `fits` against `memory_limit_bytes`.
Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label);

// Thrown by the CLI when no plan fits: main prints the message and exits 2.
struct NoPlanFits : ConfigError {
  using ConfigError::ConfigError;
};

}  // namespace fsdpx
