// tests/core/test_fp8.cpp — the plan's fp8 section: absent means none, an exact round trip, and one test
// per input error (GPU without an fp8 peak, compute dtype, rowwise with fp8 all-gather, unknown scaling
// or key), each asserting the file and JSON path in the one-line message; the backends' capability rows.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/backend_capabilities.h"
#include "core/json_reader.h"
#include "core/plan.h"
#include "tests/support/plan_errors.h"

namespace fsdpx {
namespace {

const std::string kSample = std::string(FSDPX_TEST_DATA_DIR) + "/plans/llama-tiny-cpu.json";

// The sample plan in bf16 on a GPU with an fp8 peak (`fp8_peak`: false leaves it without), with `fp8`.
nlohmann::json fp8_plan(const nlohmann::json& fp8, bool fp8_peak = true) {
  nlohmann::json j = load_json_file(kSample);
  if (fp8_peak) j["cluster"]["gpu"]["peak_tflops"]["fp8"] = 2000;
  j["mixed_precision"]["param_dtype"] = "bf16";
  j["fp8"] = fp8;
  return j;
}

using test::check_plan_error;
using test::plan_error_of;

TEST_CASE("fp8: absent means none; scaling names round trip") {
  CHECK_FALSE(parse_plan(load_json_file(kSample), "s.json").fp8.has_value());
  for (const char* name : {"tensorwise", "rowwise", "delayed", "current"}) {
    Fp8Scaling s{};
    REQUIRE(parse_fp8_scaling(name, s));
    CHECK(fp8_scaling_name(s) == name);
  }
  Fp8Scaling s{};
  CHECK_FALSE(parse_fp8_scaling("mxfp8", s));
  CHECK(fp8_is_torchao(Fp8Scaling::rowwise));
  CHECK_FALSE(fp8_is_torchao(Fp8Scaling::delayed));
}

TEST_CASE("fp8: round trip through plan_to_json") {
  const Plan p = parse_plan(fp8_plan({{"scaling", "tensorwise"}, {"all_gather", true}}), "s.json");
  REQUIRE(p.fp8.has_value());
  CHECK(p.fp8->scaling == Fp8Scaling::tensorwise);
  CHECK(p.fp8->all_gather);
  const Plan q = parse_plan(plan_to_json(p), "again.json");
  REQUIRE(q.fp8.has_value());
  CHECK(q.fp8->scaling == Fp8Scaling::tensorwise);
  CHECK(q.fp8->all_gather);
  CHECK_FALSE(parse_plan(fp8_plan({{"scaling", "delayed"}}), "s.json").fp8->all_gather);  // default false
}

TEST_CASE("fp8: input errors name the file and path") {
  check_plan_error(fp8_plan({{"scaling", "tensorwise"}}, false), "/fp8", "no fp8 tensor-core peak");
  check_plan_error(fp8_plan({{"scaling", "rowwise"}, {"all_gather", true}}), "/fp8/all_gather", "tensorwise");
  check_plan_error(fp8_plan({{"scaling", "mx"}}), "/fp8/scaling", "tensorwise");
  check_plan_error(fp8_plan({{"scaling", "tensorwise"}, {"amax_history", 16}}), "/fp8/amax_history", "unknown key");
  check_plan_error(fp8_plan(nlohmann::json::object()), "/fp8/scaling", "missing");
  nlohmann::json fp16 = fp8_plan({{"scaling", "tensorwise"}});
  fp16["mixed_precision"]["param_dtype"] = "fp16";
  check_plan_error(fp16, "/fp8", "bf16");
}

TEST_CASE("fp8: the CPU row trains tensorwise only, the CUDA row no recipe yet; the gap names /fp8/scaling") {
  for (const char* scaling : {"tensorwise", "rowwise", "delayed"}) {
    const Plan p = parse_plan(fp8_plan({{"scaling", scaling}}), "s.json");
    for (const BackendCapabilities& caps : all_backend_capabilities()) {
      bool gap = false;
      for (const CapabilityGap& g : capability_gaps(p, caps)) gap |= g.path == "/fp8/scaling" && !g.searched;
      CAPTURE(scaling);
      CHECK_MESSAGE(gap == (caps.device == ExecutorDevice::cuda || std::string(scaling) != "tensorwise"), caps.name);
    }
  }
}

TEST_CASE("fp8: the host cluster accepts fp32 around fp8 (the CPU computes fp32 for bf16), a GPU does not") {
  nlohmann::json host = fp8_plan({{"scaling", "tensorwise"}});
  host["mixed_precision"]["param_dtype"] = "fp32";
  CHECK(parse_plan(host, "s.json").fp8.has_value());
  nlohmann::json gpu = host;
  gpu["cluster"]["host_threads"] = false;
  check_plan_error(gpu, "/fp8", "expected \"bf16\"");
}

}  // namespace
}  // namespace fsdpx
