// core/fp8.cpp — reading, writing and checking the plan's fp8 section (see fp8.h).
#include "core/fp8.h"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "core/plan.h"

namespace fsdpx {

namespace {

constexpr std::array<std::pair<Fp8Scaling, const char*>, 4> kScalings{{
    {Fp8Scaling::tensorwise, "tensorwise"},
    {Fp8Scaling::rowwise, "rowwise"},
    {Fp8Scaling::delayed, "delayed"},
    {Fp8Scaling::current, "current"},
}};

}  // namespace

std::string_view fp8_scaling_name(Fp8Scaling s) {
  for (const auto& [v, n] : kScalings)
    if (v == s) return n;
  return "?";
}

bool parse_fp8_scaling(std::string_view name, Fp8Scaling& out) {
  for (const auto& [v, n] : kScalings)
    if (name == n) {
      out = v;
      return true;
    }
  return false;
}

bool fp8_is_torchao(Fp8Scaling s) { return s == Fp8Scaling::tensorwise || s == Fp8Scaling::rowwise; }

Fp8Settings parse_fp8_settings(JsonObject o) {
  Fp8Settings s;
  const std::string name = o.choice("scaling", {"tensorwise", "rowwise", "delayed", "current"});
  parse_fp8_scaling(name, s.scaling);
  s.all_gather = o.optional_boolean("all_gather").value_or(false);
  o.finish();
  return s;
}

nlohmann::json fp8_settings_to_json(const Fp8Settings& s) {
  return {{"scaling", std::string(fp8_scaling_name(s.scaling))}, {"all_gather", s.all_gather}};
}

void check_fp8(const Plan& p, const std::string& file) {
  if (!p.fp8) return;
  if (!p.cluster.gpu.peak_flops_per_s.count(DType::fp8))
    throw_config_error(file, "/fp8",
                       fmt::format("GPU \"{}\" has no fp8 tensor-core peak (fp8 GEMMs need Hopper or Blackwell); "
                                   "remove fp8",
                                   p.cluster.gpu.name));
  // The CPU reference backend computes fp32 where a GPU computes bf16 (core/backend_capabilities.cpp), so
  // on the host cluster fp8 runs around fp32 (executor/model/fp8_linear.h).
  const bool host_fp32 = p.cluster.host_threads && p.precision.param == DType::fp32;
  if (p.precision.param != DType::bf16 && !host_fp32)
    throw_config_error(file, "/fp8",
                       fmt::format("fp8 recipes run their linear GEMMs in fp8 around bf16 compute; "
                                   "mixed_precision.param_dtype is \"{}\", expected \"bf16\"{}",
                                   dtype_name(p.precision.param),
                                   p.cluster.host_threads ? " (or \"fp32\" on the CPU reference backend)" : ""));
  if (p.fp8->all_gather && p.fp8->scaling == Fp8Scaling::rowwise)
    throw_config_error(file, "/fp8/all_gather",
                       "fp8 all-gather needs one scale per weight tensor (torchao/float8/config.py: "
                       "\"enable_fsdp_float8_all_gather only supports tensorwise scaling granularity\"); "
                       "use scaling \"tensorwise\" or all_gather false");
}

}  // namespace fsdpx
