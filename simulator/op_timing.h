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

// Whether the plan's distributed optimizer is Apex's DistributedFusedAdam of the pre-2023 Megatron / NeMo
// stacks (op_timing.cpp): data-parallel collectives in 100 MB buckets, parameters gathered in step().
bool apex_distributed_adam(const Plan& plan);

}  // namespace fsdpx
