// executor/runtime/loss_scaler.h — the state of fp16's loss scaler and its update after each step, as
// PyTorch's GradScaler keeps and updates it (torch/amp/grad_scaler.py; the update is
// aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp, _amp_update_scale_cpu_kernel, and its CUDA twin in
// aten/src/ATen/native/cuda/AmpKernels.cu): an fp32 scale and the count of clean steps in a row. Every rank
// holds the same state: the inf/NaN flag it updates from is all-reduced first. Leaves out hysteresis.
#pragma once

#include <cstdint>

#include "core/loss_scale.h"

namespace fsdpx {

struct LossScalerState {
  float scale = 65536.0f;           // the loss is multiplied by it before backward (fp32, as GradScaler's _scale)
  std::int64_t growth_tracker = 0;  // clean steps in a row since the last change of the scale
  std::int64_t skipped_steps = 0;   // steps skipped for inf/NaN gradients so far (Adam counts the others)
  bool operator==(const LossScalerState&) const = default;
};

LossScalerState initial_loss_scaler(const LossScaleSettings& s);

// After a step: on `found_inf` scale · backoff_factor and the tracker reset; else the tracker counts the
// step and, reaching growth_interval, the scale grows by growth_factor unless that leaves fp32's range
// (then it stays) and the tracker restarts. A static scaler (dynamic = false) only counts skipped steps.
void update_loss_scaler(LossScalerState& state, const LossScaleSettings& s, bool found_inf);

}  // namespace fsdpx
