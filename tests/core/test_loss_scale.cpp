// tests/core/test_loss_scale.cpp — the plan's loss_scale section: defaults (PyTorch GradScaler's), an exact
// round trip, and one test per input error (wrong dtype, each range, unknown keys, wrong types), each
// asserting the file and JSON path in the one-line message.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.h"
#include "core/plan.h"
#include "tests/support/plan_errors.h"

namespace fsdpx {
namespace {

const std::string kSample = std::string(FSDPX_TEST_DATA_DIR) + "/plans/llama-tiny-cpu.json";

// The sample plan in fp16 with `loss_scale`.
nlohmann::json fp16_plan(const nlohmann::json& loss_scale) {
  nlohmann::json j = load_json_file(kSample);
  j["mixed_precision"]["param_dtype"] = "fp16";
  j["loss_scale"] = loss_scale;
  return j;
}

using test::check_plan_error;
using test::plan_error_of;

TEST_CASE("loss_scale: GradScaler's defaults, and absent means no scaling") {
  const Plan none = parse_plan(load_json_file(kSample), "sample.json");
  CHECK_FALSE(none.loss_scale.has_value());
  const Plan p = parse_plan(fp16_plan(nlohmann::json::object()), "fp16.json");
  REQUIRE(p.loss_scale.has_value());
  CHECK(p.loss_scale->initial_scale == 65536.0);  // torch.amp.GradScaler(init_scale=2.0**16)
  CHECK(p.loss_scale->growth_factor == 2.0);
  CHECK(p.loss_scale->backoff_factor == 0.5);
  CHECK(p.loss_scale->growth_interval == 2000);
  CHECK(p.loss_scale->dynamic);
}

TEST_CASE("loss_scale: round trip through plan_to_json") {
  const nlohmann::json ls{{"initial_scale", 1099511627776.0}, {"growth_factor", 4.0}, {"backoff_factor", 0.25},
                          {"growth_interval", 3}, {"dynamic", false}};
  const Plan p = parse_plan(fp16_plan(ls), "fp16.json");
  const nlohmann::json out = plan_to_json(p);
  CHECK(out.at("loss_scale") == ls);
  const Plan again = parse_plan(out, "again.json");
  REQUIRE(again.loss_scale.has_value());
  CHECK(again.loss_scale->initial_scale == 1099511627776.0);
  CHECK(again.loss_scale->growth_interval == 3);
  CHECK_FALSE(again.loss_scale->dynamic);
  CHECK_FALSE(plan_to_json(parse_plan(load_json_file(kSample), "s.json")).contains("loss_scale"));
}

TEST_CASE("loss_scale: only with fp16") {
  for (const char* dtype : {"fp32", "bf16"}) {
    nlohmann::json j = fp16_plan(nlohmann::json::object());
    j["mixed_precision"]["param_dtype"] = dtype;
    check_plan_error(j, "/loss_scale", "loss scaling is for fp16");
  }
}

TEST_CASE("loss_scale: ranges, types and unknown keys") {
  check_plan_error(fp16_plan({{"initial_scale", 0}}), "/loss_scale/initial_scale", "expected a number in");
  check_plan_error(fp16_plan({{"initial_scale", 1e39}}), "/loss_scale/initial_scale", "expected a number in");
  check_plan_error(fp16_plan({{"initial_scale", "big"}}), "/loss_scale/initial_scale", "expected a number");
  check_plan_error(fp16_plan({{"growth_factor", 1.0}}), "/loss_scale/growth_factor", "(1, 1000]");
  check_plan_error(fp16_plan({{"backoff_factor", 1.0}}), "/loss_scale/backoff_factor", "1)");
  check_plan_error(fp16_plan({{"backoff_factor", 0}}), "/loss_scale/backoff_factor", "1)");
  check_plan_error(fp16_plan({{"growth_interval", 0}}), "/loss_scale/growth_interval", "expected an integer in [1, 2147483647]");
  check_plan_error(fp16_plan({{"growth_interval", 2.5}}), "/loss_scale/growth_interval", "integer");
  check_plan_error(fp16_plan({{"dynamic", 1}}), "/loss_scale/dynamic", "");
  check_plan_error(fp16_plan({{"hysteresis", 2}}), "/loss_scale/hysteresis", "");
  check_plan_error(fp16_plan(3), "/loss_scale", "");
}

}  // namespace
}  // namespace fsdpx
