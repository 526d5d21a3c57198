// tests/planner/test_wrapping.cpp — the three wrapping policies against hand-worked groupings: per-block
// k, FSDP1's size-based policy at thresholds chosen around the parameter counts, and SimpleFSDP's
// greedy bucketing on a toy cost table worked out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/config_paths.h"
#include "cost_models/params.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

std::vector<std::vector<std::string>> modules_of(const std::vector<PlanUnit>& units) {
  std::vector<std::vector<std::string>> out;
  for (const auto& u : units) out.push_back(u.modules);
  return out;
}

ModelSpec five_layer_llama() {
  ModelSpec m = load_model("llama-tiny");
  m.layers = 5;
  m.tied_embeddings = false;
  return m;
}

}  // namespace

TEST_CASE("per-block wrapping groups k blocks, keeps the last unit unsharded, merges on request") {
  const ModelSpec m = five_layer_llama();
  const auto units = wrap_per_block(m, PerBlockWrapping{2, false, false});
  using V = std::vector<std::vector<std::string>>;
  CHECK(modules_of(units) == V{{"embedding"}, {"block.0", "block.1"}, {"block.2", "block.3"}, {"block.4"}, {"final_norm", "head"}});
  CHECK(units.back().reshard_after_forward == 0);
  CHECK(units.front().reshard_after_forward == 1);
  const auto merged = wrap_per_block(m, PerBlockWrapping{3, true, true});
  CHECK(modules_of(merged) == V{{"embedding", "block.0", "block.1", "block.2"}, {"block.3", "block.4", "final_norm", "head"}});
}

TEST_CASE("per-block wrapping keeps a tied embedding with the head") {
  ModelSpec m = five_layer_llama();
  m.tied_embeddings = true;
  const auto units = wrap_per_block(m, PerBlockWrapping{5, true, true});
  using V = std::vector<std::vector<std::string>>;
  CHECK(modules_of(units) == V{{"block.0", "block.1", "block.2", "block.3", "block.4"}, {"embedding", "final_norm", "head"}});
}

TEST_CASE("FSDP1 size-based policy: blocks alone, the ModuleList, or the root by threshold") {
  const ModelSpec m = five_layer_llama();
  const ParamCounts pc = count_params(m);
  using V = std::vector<std::vector<std::string>>;
  SUBCASE("threshold at one block: every block is a unit of its own") {
    const auto units = wrap_fsdp1_size_based(m, double(pc.per_block));
    // The embedding is a unit alone whether wrapped itself or left to the root (the root's remainder
    // splits into consecutive runs); final_norm is too small and stays with an unwrapped head.
    V expected{{"embedding"}, {"block.0"}, {"block.1"}, {"block.2"}, {"block.3"}, {"block.4"}};
    if (pc.head >= pc.per_block) expected.insert(expected.end(), {{"final_norm"}, {"head"}});
    else expected.push_back({"final_norm", "head"});
    CHECK(modules_of(units) == expected);
  }
  SUBCASE("threshold at 1.5 blocks: the five blocks together are the ModuleList's unit") {
    const double min_params = 1.5 * double(pc.per_block);
    const auto units = wrap_fsdp1_size_based(m, min_params);
    V expected{{"embedding"}, {"block.0", "block.1", "block.2", "block.3", "block.4"}};
    // The root keeps final_norm (and the head when it is below the threshold): one run after the blocks.
    if (double(pc.head) >= min_params) expected.insert(expected.end(), {{"final_norm"}, {"head"}});
    else expected.push_back({"final_norm", "head"});
    CHECK(modules_of(units) == expected);
  }
  SUBCASE("threshold above the model: one unit, the root") {
    const auto units = wrap_fsdp1_size_based(m, 10.0 * double(pc.total()));
    REQUIRE(units.size() == 1);
    CHECK(units[0].modules.size() == 8);
  }
}

TEST_CASE("SimpleFSDP greedy bucketing matches the hand-worked example") {
  // Ten modules of 1 s compute and 0.4 bytes each; an all-gather of b bytes takes b seconds, a
  // reduce-scatter nothing. Rule 1 by hand: bucket 0 has no earlier compute, so it closes after module
  // 0; bucket 1 hides behind 1 s: AG(0.8) = 0.8 fits, AG(1.2) does not -> {1, 2}; bucket 2 hides behind
  // 2 s: up to 5 modules (AG 2.0 <= 2) -> {3..7}; bucket 3 behind 5 s takes the rest {8, 9}.
  BucketingInputs in;
  in.compute_s.assign(10, 1.0);
  in.gathered_bytes.assign(10, 0.4);
  in.grad_bytes.assign(10, 0.4);
  in.all_gather_time_s = [](double b) { return b; };
  in.reduce_scatter_time_s = [](double) { return 0.0; };
  using V = std::vector<std::vector<int>>;
  CHECK(simplefsdp_buckets(in) == V{{0}, {1, 2}, {3, 4, 5, 6, 7}, {8, 9}});
  SUBCASE("memory rule: two live buckets within 2 bytes cap a bucket at 1 byte (two modules)") {
    in.memory_budget_bytes = 2.0;
    CHECK(simplefsdp_buckets(in) == V{{0}, {1, 2}, {3, 4}, {5, 6}, {7, 8}, {9}});
  }
  SUBCASE("the previous reduce-scatter also has to hide behind the previous compute") {
    in.reduce_scatter_time_s = [](double b) { return b; };
    // Bucket {1} hides behind 1 s of compute and the 0.4 s reduce-scatter of {0}: adding module 2
    // needs AG(0.8) + 0.4 = 1.2 > 1, so it closes; the same holds for every later bucket.
    const auto b = simplefsdp_buckets(in);
    REQUIRE(b.size() >= 3);
    CHECK(b[1] == std::vector<int>{1});
    CHECK(b[2] == std::vector<int>{2});
  }
}

}  // namespace fsdpx
