// tools/predicted_kineto_trace.h — a simulated step written in the PyTorch profiler's (Kineto's) layout, one
// file per simulated rank as torchtitan writes them (DIR/rank{r}_trace.json), so HTA's TraceAnalysis and
// Perfetto open the prediction beside the user's real run and fsdpx's own reader (kineto/) measures it like
// one: the device as pid, the stream as tid, each op a "kernel" event launched by a "cudaLaunchKernel" call
// with the same correlation id, collectives named as NCCL's kernels with the profiler's NCCL arguments, one
// ProfilerStep#1. Leaves out CPU ops, memory events and flows.
#pragma once

#include <string>

#include "simulator/simulate.h"

namespace fsdpx {

// Needs `sim` run with record_ops. Writes rank{r}_trace.json per simulated global rank into `dir` (created);
// returns the number of files written.
int write_predicted_kineto_traces(const Simulation& sim, const std::string& dir);

}  // namespace fsdpx
