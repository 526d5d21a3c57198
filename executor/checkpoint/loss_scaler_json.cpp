// executor/checkpoint/loss_scaler_json.cpp — the loss scaler in a manifest (see loss_scaler_json.h).
#include "executor/checkpoint/loss_scaler_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace fsdpx {

// The fp32 scale is written as the double it widens to, so it reads back exactly.
nlohmann::json loss_scaler_json(const LossScalerState& s) {
  return {{"scale", double(s.scale)}, {"growth_tracker", s.growth_tracker}, {"skipped_steps", s.skipped_steps}};
}

LossScalerState parse_loss_scaler(JsonObject o, std::int64_t step) {
  LossScalerState s;
  const nlohmann::json& v = o.raw("scale");
  const double scale = v.is_number() ? v.get<double>() : -1.0;
  if (!(scale > 0 && scale <= double(std::numeric_limits<float>::max())) || float(scale) <= 0)
    o.fail("scale", fmt::format("expected a positive finite fp32 number, got {}", json_excerpt(v)));
  s.scale = float(scale);
  s.growth_tracker = o.integer_in("growth_tracker", IntRange{0, std::int64_t{1} << 40});
  s.skipped_steps = o.integer_in("skipped_steps", IntRange{0, step});
  o.finish();
  return s;
}

}  // namespace fsdpx
