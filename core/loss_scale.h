// core/loss_scale.h — the plan's loss scaling for fp16 mixed precision (Micikevicius et al. 2018, "Mixed
// Precision Training", §3.2): the loss is multiplied by a scale before backward so that small gradients
// survive fp16, and the gradients are unscaled before the optimizer. Dynamic scaling follows PyTorch's
// torch.amp.GradScaler (torch/amp/grad_scaler.py): on an inf/NaN gradient the step is skipped and the
// scale multiplied by backoff_factor; after growth_interval clean steps in a row it is multiplied by
// growth_factor. Static scaling keeps the scale and still skips steps with inf/NaN gradients (Megatron-LM's
// ConstantGradScaler, megatron/core/optimizer/grad_scaler.py). Leaves out hysteresis and a minimum scale.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace fsdpx {

class JsonObject;
struct Plan;

struct LossScaleSettings {
  double initial_scale = 65536.0;  // GradScaler's init_scale, 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
  bool dynamic = true;  // false: a static scale (initial_scale throughout)
};

// Reads the plan's "loss_scale" object strictly (ranges are checked by check_loss_scale).
LossScaleSettings parse_loss_scale(JsonObject o);
nlohmann::json loss_scale_to_json(const LossScaleSettings& s);
// The plan's loss scale against its ranges and its precision: loss scaling belongs to fp16 (bf16 and
// fp32 have fp32's exponent range, so their gradients do not overflow or underflow for want of it).
// Throws ConfigError "<file>: /loss_scale/<key>: ...".
void check_loss_scale(const Plan& p, const std::string& file);

}  // namespace fsdpx
