// kineto/step_phases.h — a profiled step of a user's run in the step program's phases (forward, backward,
// optimizer; all_gather, reduce_scatter, all_reduce, ...), so it can be laid beside a plan's simulated step.
// GPU traces: compute kernels by where they were launched (inside "Optimizer.step#..." -> optimizer; from
// the autograd engine, i.e. under "autograd::engine::evaluate_function" or on another thread than the
// training loop -> backward; else forward) and NCCL kernels by collective. Traces without GPU activity (a
// CPU run with gloo): the training thread's top-level CPU ops the same way, and each collective's time
// from the gloo worker thread that ran it. Means over the profiled steps; leaves out per-block rows.
#pragma once

#include <map>
#include <string>

#include "kineto/kineto_trace.h"

namespace fsdpx {

struct MeasuredPhases {
  bool host = false;  // no GPU activity: times are the training thread's
  int steps = 0;
  double step_s = 0;                            // mean ProfilerStep duration
  std::map<std::string, double> phase_s;        // per step: busy time per phase
  std::map<std::string, double> phase_count;    // per step: kernels, ops or collectives per phase
  double exposed_communication_s = 0;           // per step (GPU traces; host: communication on the thread)
};

// A ConfigError naming the trace when it has no ProfilerStep annotation.
MeasuredPhases measured_phases(const RankTrace& trace);

}  // namespace fsdpx
