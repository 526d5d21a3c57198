// tests/executor/test_optimizer_ranges.cpp — buffers stay out of AdamW (executor/model/optimizer_ranges.h):
// the stepped ranges of a unit's state leave out exactly DeepSeek-V3's e_score_correction_bias, in one shard
// and in the two expert-parallel parts; and on the CPU backend a bias loaded as 0.5 is still 0.5 after 3
// steps with weight decay 0.1 at ep 1 and 2 (stepped, it would shrink by lr · 0.1 each step) while the
// parameters move.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "executor/checkpoint/reshard.h"
#include "executor/model/optimizer_ranges.h"
#include "tests/executor/buffer_fixtures.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

std::int64_t covered(const ShardRanges& r) {
  std::int64_t n = 0;
  for (const auto& [b, e] : r) n += e - b;
  return n;
}

Plan deepseek_plan(int ep) {
  test::PlanShape shape;
  shape.dp_shard = 2;
  Plan p = test::tiny_plan(load_model("deepseek-tiny"), shape);
  p.optimizer.weight_decay = 0.1;
  p.parallelism.ep = ep;
  validate_plan(p, "test plan");
  return p;
}

}  // namespace

TEST_CASE("stepped ranges leave out exactly the correction biases, in one shard and in two parts") {
  const ModelSpec m = load_model("deepseek-tiny");
  const ParamLayout layout = make_param_layout(m);
  std::vector<std::string> all;
  for (const ModuleLayout& ml : layout.modules) all.push_back(ml.name);
  const FlatUnitLayout flat = make_flat_unit(layout, all, 2);
  const std::int64_t biases = m.moe.experts * (m.layers - m.moe.dense_layers);
  std::int64_t stepped = 0;
  for (int r = 0; r < 2; ++r)
    stepped += covered(stepped_ranges(layout, flat, r * flat.shard_numel, flat.shard_numel));
  CHECK(stepped == flat.padded_numel - biases);
  const ParamLayout local = make_param_layout(m, {}, EpSlice{2, 0});
  const FlatUnitLayout lf = make_flat_unit(local, all, 2);
  stepped = 0;
  for (int r = 0; r < 2; ++r) {
    const ExpertShards parts = make_expert_shards(local, lf, 2, r, 1, 0);
    stepped += covered(stepped_ranges(local, lf, parts)) - parts.expert_shard;
  }
  CHECK(stepped == 2 * make_expert_shards(local, lf, 2, 0, 1, 0).dense_shard - biases);
  const ParamLayout mixtral = make_param_layout(load_model("mixtral-tiny"));  // no buffer: the whole state
  const FlatUnitLayout mf = make_flat_unit(mixtral, {mixtral.modules[1].name}, 1);
  CHECK(stepped_ranges(mixtral, mf, 0, mf.shard_numel) == ShardRanges{{0, mf.shard_numel}});
}

TEST_CASE("a loaded correction bias stays as loaded through AdamW with weight decay (CPU, ep 1 and 2)") {
  const Plan base = deepseek_plan(1);
  const auto data = std::make_shared<test::HashData>(base.model.vocab);
  TrainerState state = Trainer(base, data).state();
  CHECK(test::set_buffers(state, base.model, 0.5f) == base.model.moe.experts * (base.model.layers - 1));
  for (int ep : {1, 2}) {
    CAPTURE(ep);
    Trainer t(deepseek_plan(ep), data);
    t.load_state(reshard_state(state, t.load_layout(), "biased state"));
    const std::vector<float> before = t.gather_full_params();
    for (int s = 0; s < 3; ++s) t.step();
    const std::vector<float> after = t.gather_full_params();
    for (float b : test::buffer_values(after, base.model)) CHECK(b == 0.5f);
    CHECK(test::max_rel_diff(after, before) > 1e-4);  // the parameters did step
  }
}

}  // namespace fsdpx
