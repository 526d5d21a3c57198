// simulator/op_timing.h — fills each op's duration from the cost models: compute ops from their work
// set's kernels (roofline) plus serial TP/CP collectives, collectives from the NCCL model for their
// group. A calibration (measured per-kernel efficiencies, from `fsdpx calibrate`) replaces the
// default efficiency curves when given. Leaves out per-rank variation.
#pragma once

#include "core/cluster_spec.h"
#include "core/dtype.h"
#include "program/step_program.h"

namespace fsdpx {

void time_program(StepProgram& program, const ClusterSpec& cluster, DType compute_dtype);

}  // namespace fsdpx
