// simulator/op_timing.h — fills each op's duration from the cost models: compute ops from their work
// set's kernels (roofline) plus serial TP/CP collectives and the FSDP implementation's copies,
// collectives from the NCCL model for their group (with fabric loads and the SMs their kernels hold).
// A calibration (measured per-kernel efficiencies, from `fsdpx calibrate`) replaces the default
// efficiency curves when given. Leaves out per-rank variation.
#pragma once

#include "core/plan.h"
#include "program/step_program.h"

namespace fsdpx {

// Times `program`, lowered from `plan`, on the plan's cluster for the plan's training stack.
void time_program(StepProgram& program, const Plan& plan);

}  // namespace fsdpx
