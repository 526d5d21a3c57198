// program/segment_work.h — what one segment (consecutive modules of one FSDP unit) computes and
// keeps for one micro-batch: the kernels and serial TP/CP collectives of its forward and of its
// backward (recompute + input-gradient + weight-gradient, or split into ZB's B = recompute +
// input-gradient and W = weight-gradient), the activation bytes it saves for backward, the extra
// working bytes its backward needs and what B keeps for W. Built from the compute and memory cost
// models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "program/parallel_comms.h"
#include "program/step_program.h"

namespace fsdpx {

// The plan's segments (step_program.h Segment) in forward order.
std::vector<Segment> plan_segments(const Plan& plan);

// Parameters of each unit on one rank after TP, before data-parallel sharding. Under pipeline
// parallelism the last stage's head unit also holds its copy of a tied embedding.
std::vector<double> unit_params(const Plan& plan);

struct SegmentMemory {
  double saved_activation_bytes = 0;  // kept from forward to backward
  double forward_working_bytes = 0;   // alive during the forward op only (an MoE block's exchange buffers)
  double backward_working_bytes = 0;  // alive during the backward op only
  // The loss backward's tensors (the head's segment only): alive at the op's start, before autograd
  // reaches any weight of the segment, and freed before its weight gradients exist.
  double loss_backward_bytes = 0;
  double weight_pass_bytes = 0;       // kept from ZB's B to its W (the weight-gradient inputs)
};

// Which part of a segment's backward a work set holds.
enum class BackwardPart : std::uint8_t { all, input, weight };

WorkSet segment_forward_work(const Plan& plan, int first_module, int module_count, const StepGroups& g);
WorkSet segment_backward_work(const Plan& plan, int first_module, int module_count, const StepGroups& g,
                              BackwardPart part = BackwardPart::all);
SegmentMemory segment_memory(const Plan& plan, int first_module, int module_count);
// A key equal for segments whose work is identical (same module kinds, same recompute modes; an MoE
// block apart from a dense one).
std::string segment_signature(const Plan& plan, int first_module, int module_count);

}  // namespace fsdpx
