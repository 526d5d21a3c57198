// tools/run_trace.h — `fsdpx run`'s trace options (--trace FILE, --trace-ranks, --trace-steps): their
// registration, their checks before the run and the writing of the measured trace after it
// (tools/measured_trace.h). Kept apart from cmd_run.cpp so the run command only wires them in.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/session/trainer.h"

namespace fsdpx {

struct RunTraceOptions {
  std::string file;        // empty: no trace
  std::vector<int> ranks;  // empty: every rank this process runs
  int steps = 0;           // the last `steps` steps; 0: every step
};

// ConfigError for ranks outside the plan, or ranks in other processes of a multi-process run
// (`multi_process`: one process per rank; the trace holds rank 0's process); WriteError for an
// unwritable file.
void check_run_trace_options(const RunTraceOptions& o, const Plan& plan, bool multi_process);
// Writes the trace of the asked ranks that ran in this process (whole or not at all).
void write_run_trace(const RunTraceOptions& o, const Trainer& trainer, const std::string& backend,
                     const std::string& plan_file);

}  // namespace fsdpx
