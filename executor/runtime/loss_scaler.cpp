// executor/runtime/loss_scaler.cpp — GradScaler's scale update (see loss_scaler.h).
#include "executor/runtime/loss_scaler.h"

#include <cmath>

namespace fsdpx {

LossScalerState initial_loss_scaler(const LossScaleSettings& s) {
  LossScalerState st;
  st.scale = float(s.initial_scale);
  return st;
}

// The products are taken in double and stored in fp32, as the kernels multiply a float by a double factor.
void update_loss_scaler(LossScalerState& state, const LossScaleSettings& s, bool found_inf) {
  if (found_inf) ++state.skipped_steps;
  if (!s.dynamic) return;
  if (found_inf) {
    state.scale = float(double(state.scale) * s.backoff_factor);
    state.growth_tracker = 0;
    return;
  }
  const std::int64_t successful = state.growth_tracker + 1;
  if (successful != s.growth_interval) {
    state.growth_tracker = successful;
    return;
  }
  const float grown = float(double(state.scale) * s.growth_factor);
  if (std::isfinite(grown)) state.scale = grown;
  state.growth_tracker = 0;
}

}  // namespace fsdpx
