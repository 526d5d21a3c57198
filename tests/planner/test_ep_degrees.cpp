// tests/planner/test_ep_degrees.cpp — the planner's ep candidates (planner/ep_degrees.h) are exactly
// the degrees the plan checks accept (core/expert_parallel.h), for DeepSeek-V3's 256 experts and
// Mixtral's 8 on several dp_shard x cp shapes; a dense model gets ep 1 only. On the CPU target every plan of
// an MoE request's space is one its backend runs (no searched capability gap), ep > 1 with full recompute
// among them.
#include <doctest/doctest.h>

#include <string>

#include "core/backend_capabilities.h"
#include "core/config_paths.h"
#include "core/errors.h"
#include "core/expert_parallel.h"
#include "planner/ep_degrees.h"
#include "planner/exhaustive.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;
const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

bool accepted(const ModelSpec& m, Parallelism p, int ep) {
  p.ep = ep;
  try {
    check_expert_parallel(m, p, MoeRouting{}, "t");
  } catch (const ConfigError&) {
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("ep candidates are exactly the accepted degrees") {
  for (const char* hf : {"deepseek-v3", "mixtral-8x7b-v0.1"}) {
    const ModelSpec m = load_model(kData + "/hf/" + hf + "/config.json");
    for (auto [dp_shard, cp] : {std::pair{128, 1}, {96, 1}, {32, 4}, {6, 2}}) {
      Parallelism p;
      p.dp_shard = dp_shard;
      p.cp = cp;
      const std::vector<int> eps = ep_degrees(m, p);
      std::vector<int> want;
      for (int ep = 1; ep <= dp_shard * cp; ++ep)
        if (accepted(m, p, ep)) want.push_back(ep);
      INFO(hf << " dp_shard " << dp_shard << " cp " << cp);
      CHECK(eps == want);
    }
  }
  Parallelism p;
  p.dp_shard = 128;
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  CHECK(ep_degrees(v3, p) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128});
  CHECK(ep_degrees(v3, p, 16) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(ep_degrees(load_model(kConfigs + "/models/llama-tiny.json"), p) == std::vector<int>{1});
}

TEST_CASE("the CPU target's space for an MoE model holds only plans its backend runs, ep > 1 with full recompute too") {
  for (const char* model : {"mixtral-tiny", "deepseek-tiny"}) {
    PlanRequest r;
    r.model = load_model(kConfigs + "/models/" + model + ".json");
    r.cluster = load_cluster("cpu");
    r.cluster.gpus_per_node = 4;
    r.seq = 64;
    r.global_batch = 8;
    int plans = 0, ep_full = 0;
    for_each_plan(r, [&](const SpacePlan& sp) {
      const Plan& p = sp.plan;
      ++plans;
      std::string searched;
      for (const CapabilityGap& g : capability_gaps(p, backend_capabilities(ExecutorDevice::cpu)))
        if (g.searched) searched += g.path + ": " + g.what + "; ";
      INFO(model << " " << sp.wrap_label << " dp " << p.parallelism.dp_replicate << "x" << p.parallelism.dp_shard
                 << " ep " << p.parallelism.ep << " recompute " << int(p.recompute.back()));
      CHECK(searched.empty());
      ep_full += p.parallelism.ep > 1 && p.recompute.back() == RecomputeMode::full;
    });
    INFO(model);
    CHECK(plans > 0);
    CHECK(ep_full > 0);
  }
}

}  // namespace fsdpx
