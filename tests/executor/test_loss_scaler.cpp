// tests/executor/test_loss_scaler.cpp — GradScaler's update rule on hand-written inf/no-inf sequences:
// back-off on every overflow, growth on every growth_interval-th clean step in a row (the count restarts
// after an overflow and after a growth), no growth past fp32's range, a static scaler that never moves.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "executor/runtime/loss_scaler.h"

namespace fsdpx {
namespace {

std::vector<float> scales_after(LossScalerState s, const LossScaleSettings& ls, const std::vector<int>& inf) {
  std::vector<float> out;
  for (int f : inf) {
    update_loss_scaler(s, ls, f != 0);
    out.push_back(s.scale);
  }
  return out;
}

TEST_CASE("loss scaler: back-off, growth after growth_interval clean steps, tracker restarts") {
  LossScaleSettings ls;
  ls.initial_scale = 1024;
  ls.growth_interval = 3;
  const LossScalerState start = initial_loss_scaler(ls);
  CHECK(start.scale == 1024.0f);
  // inf, inf, clean x3 (grow), clean x2, inf (the two clean steps do not count), clean x3 (grow).
  const std::vector<int> inf{1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  const std::vector<float> want{512, 256, 256, 256, 512, 512, 512, 256, 256, 256, 512};
  CHECK(scales_after(start, ls, inf) == want);
  LossScalerState s = start;
  for (int f : inf) update_loss_scaler(s, ls, f != 0);
  CHECK(s.skipped_steps == 3);
  CHECK(s.growth_tracker == 0);
  ls.growth_factor = 4, ls.backoff_factor = 0.25;
  CHECK(scales_after(start, ls, {1, 0, 0, 0}) == std::vector<float>{256, 256, 256, 1024});
}

TEST_CASE("loss scaler: no growth beyond fp32's range; a static scale stays") {
  LossScaleSettings ls;
  ls.growth_interval = 1;
  LossScalerState s;
  s.scale = std::numeric_limits<float>::max() / 1.5f;
  update_loss_scaler(s, ls, false);
  CHECK(s.scale == std::numeric_limits<float>::max() / 1.5f);  // 2x would be infinite: kept
  CHECK(s.growth_tracker == 0);
  ls.dynamic = false;
  ls.initial_scale = 64;
  const std::vector<float> flat(4, 64.0f);
  CHECK(scales_after(initial_loss_scaler(ls), ls, {1, 0, 1, 0}) == flat);
}

}  // namespace
}  // namespace fsdpx
