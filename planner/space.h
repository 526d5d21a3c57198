// planner/space.h — the planner's search space, one list per dimension, after the target and the user's
// numerics narrowed it: parallel shapes with micro-batches (shapes.h), and per shape the refinements:
// wrapping, reshard_after_forward, prefetch depth, all-gather cap, reduce dtype and recompute pattern.
// The search (search.cpp, refine.cpp) and the exhaustive enumeration (exhaustive.h) read the same lists,
// so the planner's own space has one definition; a new dimension (pp) joins as one more list here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/planner.h"

namespace fsdpx {

// Which blocks a partial recompute recomputes fully: the first k (fsdpx), or every n-th block as
// torchtitan's layer-level selective AC does (activation_checkpoint.py _apply_layer_sac).
enum class PartialRecompute { none, first_k, every_nth };

struct Space {
  SearchSpace knobs;  // narrowed by the target and the request
  PartialRecompute partial = PartialRecompute::first_k;
};

Space effective_space(const PlanRequest& r);

// The request with memory_limit_bytes = capacity - margin (what a plan may use) and the margin filled in
// (default kDefaultMemoryMarginFraction of the capacity, the GPU's HBM unless given).
PlanRequest resolve_memory(const PlanRequest& r);

// A uniform mode on every block, or a member of the partial family (k blocks first, or every n-th).
struct RecomputeChoice {
  RecomputeMode uniform = RecomputeMode::none;
  int member = 0;  // 0: uniform; else first_k: k, every_nth: n
};
std::vector<RecomputeMode> recompute_pattern(const RecomputeChoice& c, std::int64_t layers, PartialRecompute partial);
// Members of the partial family in increasing number of fully recomputed blocks (first_k: 1 .. L-1;
// every_nth: n = L .. 2, floor(L / n) blocks each).
std::vector<int> partial_members(std::int64_t layers, PartialRecompute partial);
int full_blocks(int member, std::int64_t layers, PartialRecompute partial);

struct WrapChoice {
  WrapPolicy policy = WrapPolicy::per_block;
  std::string label;  // "per_block k2+emb", "fsdp1 min 1e+08", "simplefsdp"
  std::vector<PlanUnit> units;
};

// The communication configuration of a shape: everything but the recompute pattern.
struct Config {
  std::size_t wrap = 0;  // index into the shape's wrap choices
  int reshard = 1;       // 1: every unit but the last (ZeRO-3, torchtitan), 0: none (ZeRO-2), g: one node
  int prefetch = 1;
  int cap = 2;
  DType reduce = DType::fp32;
};

// Wrappings the target runs, for a shape plan (its units decide nothing; SimpleFSDP buckets use the room
// left under the limit by the shape's least-memory recompute).
std::vector<WrapChoice> wrap_choices(const Plan& shape, const PlanRequest& r, const Space& s);
std::vector<int> reshard_choices(const Plan& shape, const PlanRequest& r, const Space& s);
// The first value of every dimension: torchtitan's defaults (per-block k1, ZeRO-3, prefetch 1, cap 2, fp32).
Config default_config(const Plan& shape, const PlanRequest& r, const Space& s);

Plan configured_plan(const Plan& shape, const std::vector<WrapChoice>& wraps, const Config& c,
                     const std::vector<RecomputeMode>& recompute);

}  // namespace fsdpx
