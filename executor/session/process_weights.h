// executor/session/process_weights.h — the full fp32 parameters of a run with one process per rank, where
// no process holds every shard: each process puts its shard owners' parameters into one word vector at
// their place in the shard order, Trainer::sum_over_processes adds the vectors (each word comes from one
// process, the others add zeros), and every process re-cuts the sum into the whole model with the
// checkpoints' resharding (executor/checkpoint/reshard.h). So `--save-weights` and the parameter hash of
// a `--processes` run match a threads run's bit for bit. Costs 32 bytes per parameter per process for the
// exchange (and, under tp, cp, pp or ep, Trainer::local_state's own exchange of the state). Leaves out the
// optimizer moments.
#pragma once

#include <vector>

#include "executor/session/trainer.h"

namespace fsdpx {

// Collective over the job's processes: every process must call it, with its Trainer::local_state(). Returns
// [make_param_layout(model).total] fp32 in layout order (LoRA: the base weights, not merged).
std::vector<float> gather_full_params_over_processes(Trainer& trainer, const TrainerState& local);

}  // namespace fsdpx
