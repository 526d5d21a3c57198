// core/loss_scale.cpp — reading, writing and checking the plan's loss_scale section (see loss_scale.h).
#include "core/loss_scale.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_ranges.h"
#include "core/json_reader.h"
#include "core/plan.h"

namespace fsdpx {

LossScaleSettings parse_loss_scale(JsonObject o) {
  LossScaleSettings s;
  auto number = [&o](std::string_view key, double fallback) {
    if (!o.has(key)) return fallback;
    const nlohmann::json& v = o.raw(key);
    if (!v.is_number()) o.fail(key, fmt::format("expected a number, got {}", json_excerpt(v)));
    return v.get<double>();
  };
  s.initial_scale = number("initial_scale", s.initial_scale);
  s.growth_factor = number("growth_factor", s.growth_factor);
  s.backoff_factor = number("backoff_factor", s.backoff_factor);
  if (o.has("growth_interval")) s.growth_interval = o.integer("growth_interval");
  s.dynamic = o.optional_boolean("dynamic").value_or(s.dynamic);
  o.finish();
  return s;
}

nlohmann::json loss_scale_to_json(const LossScaleSettings& s) {
  return {{"initial_scale", s.initial_scale}, {"growth_factor", s.growth_factor},
          {"backoff_factor", s.backoff_factor}, {"growth_interval", s.growth_interval}, {"dynamic", s.dynamic}};
}

// GradScaler's own checks (torch/amp/grad_scaler.py __init__: growth_factor > 1, backoff_factor < 1), the
// scale a finite normal fp32 number (the scale lives in an fp32 tensor), the interval an int32 (the
// update kernel's type).
void check_loss_scale(const Plan& p, const std::string& file) {
  if (!p.loss_scale) return;
  const LossScaleSettings& s = *p.loss_scale;
  auto require = [&file](bool ok, const char* key, std::string_view what) {
    if (!ok) throw_config_error(file, fmt::format("/loss_scale/{}", key), what);
  };
  if (p.precision.param != DType::fp16)
    throw_config_error(file, "/loss_scale",
                       fmt::format("loss scaling is for fp16 (mixed_precision.param_dtype is \"{}\": bf16 and fp32 "
                                   "keep fp32's exponent range, so gradients need no scaling); remove loss_scale or "
                                   "set param_dtype to \"fp16\"",
                                   dtype_name(p.precision.param)));
  const NumberRange scale = input_range::kLossScale;
  require(s.initial_scale >= scale.min && s.initial_scale <= scale.max, "initial_scale",
          fmt::format("expected a number in [{}, {}] (docs/input-ranges.md), got {}", scale.min, scale.max,
                      s.initial_scale));
  require(s.growth_factor > 1 && s.growth_factor <= input_range::kLossScaleFactorMax, "growth_factor",
          fmt::format("expected a number in (1, {}], got {}", input_range::kLossScaleFactorMax, s.growth_factor));
  require(s.backoff_factor >= 1 / input_range::kLossScaleFactorMax && s.backoff_factor < 1, "backoff_factor",
          fmt::format("expected a number in [{}, 1), got {}", 1 / input_range::kLossScaleFactorMax, s.backoff_factor));
  const IntRange interval = input_range::kGrowthInterval;
  require(s.growth_interval >= interval.min && s.growth_interval <= interval.max, "growth_interval",
          fmt::format("expected an integer in [{}, {}], got {}", interval.min, interval.max, s.growth_interval));
}

}  // namespace fsdpx
