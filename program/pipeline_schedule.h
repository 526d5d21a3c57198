// program/pipeline_schedule.h — the order in which one pipeline rank runs the passes of its model chunks
// over the micro-batches of a step: GPipe (all forwards, then all backwards; torch.distributed.
// pipelining's ScheduleGPipe), 1F1B (pp − rank − 1 warm-up forwards, one forward and one backward
// alternately, then the remaining backwards; Narayanan et al. 2021 §2.2, Megatron-LM's
// forward_backward_pipelining_without_interleaving), interleaved 1F1B (Megatron-LM's
// forward_backward_pipelining_with_interleaving: micro-batches in groups of pp per chunk, (pp − rank −
// 1)·2 + (vpp − 1)·pp warm-up forwards; megatron/core/pipeline_parallel/schedules.py) and ZB-H1 (Qi et
// al. 2023: 1F1B whose backward is split into B, the input gradient, and W, the weight gradient; rank r
// starts its W passes r steps late so that they fill the cool-down bubble; torch's
// ScheduleInterleavedZeroBubble with one stage per rank, _get_1f1b_rank_ops(enable_zero_bubble)).
// Without pipelining: forward then backward per micro-batch. Leaves out V-shaped schedules.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

enum class PipePass : std::uint8_t {
  forward,
  backward,         // input and weight gradients together
  backward_input,   // ZB's B
  backward_weight,  // ZB's W
};
const char* pipe_pass_name(PipePass p);

struct PipeAction {
  PipePass pass = PipePass::forward;
  int chunk = 0;  // model chunk of this rank (virtual stage chunk x pp + rank)
  int micro_batch = 0;
};

// The passes pipeline rank `rank` runs, in order. Throws FSDP_CHECK failures for inconsistent inputs
// (plans are validated first: validate_plan checks the micro-batches against the schedule).
std::vector<PipeAction> pipeline_actions(PipelineSchedule schedule, int pp, int vpp, int rank, int micro_batches);

// Forward passes rank `rank` runs before its first backward (the warm-up), as the schedule defines it.
int warmup_forwards(PipelineSchedule schedule, int pp, int vpp, int rank, int micro_batches);

}  // namespace fsdpx
