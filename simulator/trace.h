// simulator/trace.h — the engine's timeline as a Chrome trace (JSON "Trace Event Format", opened by
// chrome://tracing and ui.perfetto.dev): one process per simulated rank (named "stage s rank k" when
// there are several pipeline stages, so the pipeline bubble shows as gaps), one thread per stream the
// rank uses, one complete ("X") event per op, and each rank's live memory as a counter ("C") track per category in
// GiB. Output is byte-identical for identical input. The same writer writes the executor's measured steps
// (`fsdpx run --trace`), so both traces share op names, processes and threads. Leaves out flow arrows for
// dependencies.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "simulator/engine.h"

namespace fsdpx {

// Needs a result run with record_ops. pid = global rank (role offset + rank), tid = StreamKind.
void write_chrome_trace(const StepProgram& program, const EngineResult& result, std::ostream& out);

// A timeline of the program from elsewhere (a measured run) in the engine's types: op intervals from 0,
// the step of each op (written as args "step"; empty when there is one step), memory samples, and a JSON
// object written as the top-level "otherData" (the Trace Event Format's metadata; empty: none).
struct TraceTimeline {
  std::vector<OpTiming> ops;
  std::vector<std::int64_t> op_steps;
  std::vector<MemorySample> memory;
  std::string other_data;
};
void write_chrome_trace(const StepProgram& program, const TraceTimeline& timeline, std::ostream& out);

}  // namespace fsdpx
