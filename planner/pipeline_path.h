// planner/pipeline_path.h — a lower bound on a pipelined step's compute stream from each virtual stage's
// compute-stream time per micro-batch (forward, backward or ZB's B, ZB's W), for any schedule and unequal
// stages (moved out of shape_bound.cpp). Leaves out the schedule's own order beyond each rank's first and
// last passes, and every transfer.
#pragma once

#include <vector>

#include "core/plan.h"

namespace fsdpx {

// Per virtual stage, one micro-batch's compute-stream seconds: f forward, b the whole backward (or ZB's
// B), w ZB's W (0 otherwise).
struct StagePasses {
  std::vector<double> f, b, w;
};

// Pipeline rank r cannot start before the first micro-batch's forward has passed the virtual stages
// before its first chunk, then runs all its passes of m micro-batches one after another; outside ZB its
// last pass is its first chunk's backward, whose gradient must still pass back through those stages
// (1F1B: (m + p - 1)(F + B) for equal stages, Narayanan et al. 2021 §2.2; interleaved (m v + p - 1) per
// chunk, §2.2.1). ZB-H1 may end on weight passes (Qi et al. 2023 §3), so no way back is counted there.
double pipeline_path_s(const Plan& plan, const StagePasses& passes);

}  // namespace fsdpx
