// tests/executor/test_checkpoint_plan.cpp — the plan's checkpoint fingerprint (executor/session/
// checkpoint_plan.h): blind to the parallel degrees and the unit grouping (a state resharded from N ranks
// to M loads), and changed by the model and the LoRA adapters' shapes and scale.
#include <doctest/doctest.h>

#include "core/config_paths.h"
#include "executor/session/checkpoint_plan.h"

namespace fsdpx {
namespace {

TEST_CASE("the plan fingerprint ignores parallel degrees and unit grouping and sees the model") {
  const Plan p = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  Plan q = p;
  q.parallelism.dp_shard = 2;
  q.training.global_batch = 4;
  CHECK(plan_fingerprint(q) == plan_fingerprint(p));
  Plan r = p;
  r.model.hidden *= 2;
  CHECK(plan_fingerprint(r) != plan_fingerprint(p));
  Plan theta = p;  // same shapes, other positions: the weights mean something else
  theta.model.rope_theta = 500000.0;
  CHECK(plan_fingerprint(theta) != plan_fingerprint(p));
  Plan lora = p;  // adapters of another shape or scale cannot load
  lora.lora = LoraSettings{};
  CHECK(plan_fingerprint(lora) != plan_fingerprint(p));
  Plan lora8 = lora;
  lora8.lora->rank = 8;
  CHECK(plan_fingerprint(lora8) != plan_fingerprint(lora));
  if (p.units.size() >= 2) {
    Plan merged = p;
    merged.units[0].modules.insert(merged.units[0].modules.end(), merged.units[1].modules.begin(),
                                   merged.units[1].modules.end());
    merged.units.erase(merged.units.begin() + 1);
    CHECK(plan_fingerprint(merged) == plan_fingerprint(p));
  }
}

}  // namespace
}  // namespace fsdpx
