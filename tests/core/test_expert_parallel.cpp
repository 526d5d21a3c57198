// tests/core/test_expert_parallel.cpp — the ep plan axis (core/expert_parallel.h): its folding onto
// dp_shard x cp, the experts' FSDP group, each check failing at /parallelism/ep or /moe/token_imbalance
// with the reason, and the plan JSON keeping dense plans' bytes (no "ep", no "moe") while reading both.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/backend_capabilities.h"
#include "core/config_paths.h"
#include "core/expert_parallel.h"
#include "core/json_reader.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "tests/support/config_error.h"
#include "tests/support/ep_parallelism.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;
const std::string kData = FSDPX_TEST_DATA_DIR;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Parallelism degrees(int dp_shard, int cp, int ep) { return test::ep_parallelism(dp_shard, ep, 1, cp); }

std::string ep_error(const ModelSpec& m, const Parallelism& p, MoeRouting r = {}) {
  return test::config_error_of([&] { check_expert_parallel(m, p, r, "plan.json"); });
}

}  // namespace

TEST_CASE("ep folds onto dp_shard x cp: the experts' FSDP group is dp_shard x cp / ep (torchtitan)") {
  CHECK(expert_fsdp_ranks(degrees(64, 1, 8)) == 8);
  CHECK(expert_fsdp_ranks(degrees(64, 1, 64)) == 1);
  CHECK(expert_fsdp_ranks(degrees(16, 2, 4)) == 8);  // ep borrows cp (2) and 2 of dp_shard
  CHECK(expert_fsdp_ranks(degrees(8, 1, 1)) == 8);   // ep 1: the experts shard like every parameter
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  CHECK(local_experts(v3, degrees(64, 1, 64)) == 4);  // 256 routed experts over 64 ranks
  CHECK(local_experts(v3, degrees(64, 1, 1)) == 256);
}

TEST_CASE("ep checks: MoE only, dividing the experts and dp_shard x cp, a multiple of cp") {
  const ModelSpec mx = load_model(kConfigs + "/models/mixtral-tiny.json");  // 4 experts
  const ModelSpec dense = load_model(kConfigs + "/models/llama-tiny.json");
  CHECK(ep_error(mx, degrees(8, 1, 4)) == "(no error)");
  CHECK(ep_error(mx, degrees(4, 2, 2)) == "(no error)");
  CHECK(ep_error(dense, degrees(8, 1, 1)) == "(no error)");
  const std::string not_moe = ep_error(dense, degrees(8, 1, 2));
  CHECK(contains(not_moe, "plan.json: /parallelism/ep: "));
  CHECK(contains(not_moe, "needs a mixture-of-experts model"));
  CHECK(contains(ep_error(mx, degrees(24, 1, 3)), "must divide the routed experts (4)"));
  CHECK(contains(ep_error(mx, degrees(2, 1, 4)), "must divide dp_shard (2) x cp (1) = 2"));
  CHECK(contains(ep_error(mx, degrees(4, 4, 2)), "cp (4) must divide ep (2)"));
  CHECK(contains(ep_error(mx, degrees(8, 1, 0)), "expected an integer >= 1, got 0"));
}

TEST_CASE("token imbalance: default 1.25 (an assumption), bounded, read strictly") {
  const ModelSpec mx = load_model(kConfigs + "/models/mixtral-tiny.json");
  CHECK(MoeRouting{}.token_imbalance == 1.25);
  CHECK(ep_error(mx, degrees(8, 1, 4), MoeRouting{1.0}) == "(no error)");
  const std::string low = ep_error(mx, degrees(8, 1, 4), MoeRouting{0.9});
  CHECK(contains(low, "plan.json: /moe/token_imbalance: expected a number in [1, 1024]"));
  CHECK(contains(ep_error(mx, degrees(8, 1, 4), MoeRouting{2000}), "got 2000"));
  const MoeRouting r = parse_moe_routing(JsonObject(nlohmann::json{{"token_imbalance", 1.5}}, "p.json", "/moe"));
  CHECK(r.token_imbalance == 1.5);
  CHECK(moe_routing_to_json(r) == nlohmann::json{{"token_imbalance", 1.5}});
  const std::string unknown = test::config_error_of(
      [] { parse_moe_routing(JsonObject(nlohmann::json{{"imbalance", 1.5}}, "p.json", "/moe")); });
  CHECK(contains(unknown, "imbalance"));
}

TEST_CASE("plan JSON: dense plans write no ep and no moe; ep and moe on a dense plan fail with their path") {
  const std::string path = kConfigs + "/plans/llama3.1-70b-dgx-h100x16-fsdp16-tp8.json";
  const Plan p = load_plan(path);
  CHECK(p.parallelism.ep == 1);
  const nlohmann::json j = plan_to_json(p);
  CHECK_FALSE(j.at("parallelism").contains("ep"));
  CHECK_FALSE(j.contains("moe"));
  nlohmann::json bad = j;
  bad["parallelism"]["ep"] = 2;
  CHECK(contains(test::config_error_of([&] { parse_plan(bad, "p.json"); }),
                 "p.json: /parallelism/ep: ep (2) > 1 needs a mixture-of-experts model"));
  bad = j;
  bad["parallelism"]["ep"] = 1;
  CHECK(parse_plan(bad, "p.json").parallelism.ep == 1);
  bad = j;
  bad["moe"] = {{"token_imbalance", 1.1}};
  CHECK(contains(test::config_error_of([&] { parse_plan(bad, "p.json"); }),
                 "p.json: /moe: routing settings need a mixture-of-experts model"));
}

}  // namespace fsdpx

namespace fsdpx {

TEST_CASE("capabilities: the CPU and CUDA backends run ep > 1; a row without it names /parallelism/ep and the reason") {
  const ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  Parallelism par;
  par.dp_shard = c.world_size();
  Plan p = default_plan(m, c, TrainingSettings{64, 1, 8, 0}, par, 1, RecomputeMode::none);
  for (const BackendCapabilities& caps : all_backend_capabilities()) {
    CAPTURE(caps.name);
    CHECK(caps.expert_parallel);  // both rows (CUDA: executor/cuda_backend/cuda_unit.h, cuda_moe_mlp.h)
    p.parallelism.ep = 1;
    for (const CapabilityGap& g : capability_gaps(p, caps)) CHECK(g.path != "/parallelism/ep");
    p.parallelism.ep = 2;  // built in code: capability_gaps reads the plan without validating it
    bool gap = false;
    for (const CapabilityGap& g : capability_gaps(p, caps))
      if (g.path == "/parallelism/ep") {
        gap = true;
        CHECK(g.searched);
        CHECK(g.what.find("does not run expert parallelism yet") != std::string::npos);
      }
    CHECK(gap == !caps.expert_parallel);
  }
  BackendCapabilities without = backend_capabilities(ExecutorDevice::cuda);
  without.expert_parallel = false;  // a row without it: the gap and its reason
  bool gap = false;
  for (const CapabilityGap& g : capability_gaps(p, without))
    gap = gap || (g.path == "/parallelism/ep" && g.searched &&
                  g.what.find("does not run expert parallelism yet") != std::string::npos);
  CHECK(gap);
}

TEST_CASE("capabilities: the CPU row trains Mixtral's and DeepSeek-V3's kinds (latent attention too) at tp = cp = pp = 1; CUDA both") {
  const ModelSpec m = load_model(kConfigs + "/models/mixtral-tiny.json");
  const ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  Parallelism par;
  par.dp_shard = c.world_size();
  const Plan p = default_plan(m, c, TrainingSettings{64, 1, 8, 0}, par, 1, RecomputeMode::none);
  CHECK(capability_gaps(p, backend_capabilities(ExecutorDevice::cpu)).empty());
  // CUDA: the MoE blocks on the device (executor/cuda_backend/cuda_moe_mlp.h); only the CPU's param dtype and
  // attention kernel, which the CUDA row never takes, stand in the way of the CPU plan.
  for (const CapabilityGap& g : capability_gaps(p, backend_capabilities(ExecutorDevice::cuda))) {
    CAPTURE(g.what);
    CHECK(g.path != "/model");
  }
  CHECK_FALSE(untrained_moe_reason(m, backend_capabilities(ExecutorDevice::cuda)).has_value());
  Plan tp = p;
  tp.parallelism.tp = 2, tp.parallelism.dp_shard = c.world_size() / 2;
  bool tp_gap = false;
  for (const CapabilityGap& g : capability_gaps(tp, backend_capabilities(ExecutorDevice::cpu)))
    tp_gap = tp_gap || (g.path == "/parallelism/tp" && g.searched && g.what.find("mixture-of-experts") != std::string::npos);
  CHECK(tp_gap);
  Plan mla = p;
  mla.model = load_model(kConfigs + "/models/deepseek-tiny.json");
  CHECK_FALSE(untrained_moe_reason(mla.model, backend_capabilities(ExecutorDevice::cpu)).has_value());
  CHECK_FALSE(untrained_moe_reason(mla.model, backend_capabilities(ExecutorDevice::cuda)).has_value());
  mla.parallelism.tp = 2, mla.parallelism.dp_shard = c.world_size() / 2;
  bool mla_tp_gap = false;
  for (const CapabilityGap& g : capability_gaps(mla, backend_capabilities(ExecutorDevice::cpu)))
    mla_tp_gap = mla_tp_gap || (g.path == "/parallelism/tp" && g.searched &&
                                g.what.find("multi-head latent attention") != std::string::npos);
  CHECK(mla_tp_gap);
  mla.parallelism.tp = 1, mla.parallelism.dp_shard = c.world_size();
  CHECK(capability_gaps(mla, backend_capabilities(ExecutorDevice::cpu)).empty());
  // DeepSeek-V3's YaRN: the shared RoPE table and MLA's softmax factor (executor/model/rope_table.h), both rows.
  mla.model.rope_scaling = load_model(kData + "/hf/deepseek-v3/config.json").rope_scaling;
  REQUIRE(mla.model.rope_scaling.kind == RopeScalingKind::yarn);
  CHECK(capability_gaps(mla, backend_capabilities(ExecutorDevice::cpu)).empty());
  for (const CapabilityGap& g : capability_gaps(mla, backend_capabilities(ExecutorDevice::cuda)))
    CHECK(g.path.rfind("/model", 0) != 0);
  // CUDA pads latent heads with zeros to its flash kernel's sizes (executor/cuda/mla.h): deepseek-tiny's 24
  // runs (as 32); DeepSeek-V3's 192 waits for a kernel instantiation checked on a GPU (a gap, not searched).
  Plan head = mla;
  head.attention_kernel = AttentionKernel::cuda_core;
  const auto latent_gap = [](const Plan& q) {
    bool gap = false;
    for (const CapabilityGap& g : capability_gaps(q, backend_capabilities(ExecutorDevice::cuda)))
      gap = gap || (g.path == "/model/mla" && !g.searched && g.what.find("up to 128 (got 192)") != std::string::npos);
    return gap;
  };
  CHECK_FALSE(latent_gap(head));
  head.model.mla.qk_nope_head_dim = 128, head.model.mla.qk_rope_head_dim = 64;
  CHECK(latent_gap(head));
  CHECK_FALSE(untrained_moe_reason(m, backend_capabilities(ExecutorDevice::cpu)).has_value());
}

}  // namespace fsdpx
