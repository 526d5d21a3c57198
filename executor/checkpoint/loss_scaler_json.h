// executor/checkpoint/loss_scaler_json.h — the loss scaler's state in a checkpoint manifest ("loss_scaler":
// scale, growth_tracker, skipped_steps), so that a resumed fp16 run continues with the scale it had
// (PyTorch saves GradScaler.state_dict() beside the optimizer's). Leaves out the scaler's settings: they
// are the plan's.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "executor/runtime/loss_scaler.h"

namespace fsdpx {

class JsonObject;

nlohmann::json loss_scaler_json(const LossScalerState& s);
// Strict: a positive finite fp32 scale, a tracker >= 0, skipped steps in [0, step]; errors name the path.
LossScalerState parse_loss_scaler(JsonObject o, std::int64_t step);

}  // namespace fsdpx
