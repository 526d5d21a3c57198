// tools/measured_trace.h — `fsdpx run --trace`'s file and what `fsdpx compare` reads back. The executor's
// measured op intervals and live memory (executor/runtime/op_timeline.h) are written by the simulator's
// trace writer (simulator/trace.h), so the measured trace has the simulated trace's op names, one process
// per rank, one thread per stream and the same memory counters; its "otherData" says it was measured and
// carries the step program's hash. Reading accepts such a trace or a `fsdpx run --profile` file
// (fsdpx-profile/1: rank 0's op times summed over the steps). Leaves out merging the traces of several
// processes: a run with one process per rank traces the ranks of the process that writes.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/runtime/op_timeline.h"
#include "program/step_program.h"
#include "simulator/op_comparison.h"

namespace fsdpx {

inline constexpr const char* kMeasuredTraceFormat = "fsdpx-measured-trace/1";

// FNV-1a 64 (hex) of what the join needs to match: per role its rank count and, per op in issue order,
// name, kind, stream and collective bytes. Equal for plans that lower to the same ops, whatever their
// cluster (a calibrated plan compares against the run of the original).
std::string program_hash(const StepProgram& program);

struct MeasuredTraceInfo {
  std::string backend;    // "cpu" or "cuda"
  std::string plan_file;  // as given to fsdpx run
};

// The Chrome/Perfetto trace of `ranks` (each op with its step), times from the earliest sample.
std::string measured_trace_json(const StepProgram& program, const std::vector<RankTimeline>& ranks,
                                const MeasuredTraceInfo& info);

// Per-op measurements of a measured trace or a profile, checked against `program` (the plan's): a file of
// another kind, another program hash, or an op outside the program is a ConfigError naming `path`. Of a
// trace with several steps, the first is left out (it pays one-time allocation), like the run's step time.
OpMeasurement load_measurement(const std::string& path, const StepProgram& program);

}  // namespace fsdpx
