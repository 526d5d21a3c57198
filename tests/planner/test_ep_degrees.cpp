// tests/planner/test_ep_degrees.cpp — the planner's ep candidates (planner/ep_degrees.h) are exactly
// the degrees the plan checks accept (core/expert_parallel.h), for DeepSeek-V3's 256 experts and
// Mixtral's 8 on several dp_shard x cp shapes; a dense model gets ep 1 only. On the CPU target every plan of
// an MoE request's space is one its backend runs (no searched capability gap), ep > 1 with full recompute
// among them; when no plan fits, the suggestions name only plans that backend runs.
#include <doctest/doctest.h>

#include <string>

#include "core/backend_capabilities.h"
#include "core/config_paths.h"
#include "core/errors.h"
#include "core/expert_parallel.h"
#include "planner/ep_degrees.h"
#include "planner/exhaustive.h"
#include "planner/shapes.h"

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

// A tiny model of configs/models on 4 CPU ranks, seq 64, for the fsdpx target.
PlanRequest cpu_request(const char* model, std::int64_t global_batch) {
  PlanRequest r;
  r.model = load_model(kConfigs + "/models/" + model + ".json");
  r.cluster = load_cluster("cpu");
  r.cluster.gpus_per_node = 4, r.seq = 64, r.global_batch = global_batch;
  return r;
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
    const PlanRequest r = cpu_request(model, 8);
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

// mixtral-tiny on 4 CPU ranks at global batch 6: no shape the CPU row runs (dp_shard 4 at tp = cp = pp = 1)
// splits 6 sequences, so nothing fits; the search once offered "fsdp 1 cp 4" at batch 7 (cp with MoE
// blocks, which the row refuses) and the least memory of such a shape.
TEST_CASE("no-fit suggestions for an MoE model on the CPU target name only shapes its row runs") {
  const PlanRequest r = cpu_request("mixtral-tiny", 6);
  for (const Parallelism& par : parallel_shapes(r)) {
    CHECK(par.tp * par.cp * par.pp == 1);
    CHECK((par.ep == 1 || par.dp_replicate == 1));
  }
  const PlanResult res = search_plans(r);
  CHECK(!res.best);
  CHECK(res.least_memory_needed_bytes == 0);  // no shape of the row: the batch split is what stands in the way
  std::string all;
  for (const std::string& s : res.suggestions) all += s + "\n";
  INFO(all);
  CHECK(all.find("nearest global batch") != std::string::npos);
  CHECK(all.find(" cp ") == std::string::npos);
  CHECK(all.find(" tp ") == std::string::npos);
  CHECK(all.find("fsdp 4") != std::string::npos);
}

}  // namespace fsdpx
