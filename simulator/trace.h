// simulator/trace.h — the engine's timeline as a Chrome trace (JSON "Trace Event Format", opened by
// chrome://tracing and ui.perfetto.dev): one process per simulated rank (named "stage s rank k" when
// there are several pipeline stages, so the pipeline bubble shows as gaps), one thread per stream the
// rank uses, one complete ("X") event per op, and each rank's live memory as a counter ("C") track per category in
// GiB. Output is byte-identical for identical input. Leaves out flow arrows for dependencies.
#pragma once

#include <ostream>

#include "simulator/engine.h"

namespace fsdpx {

// Needs a result run with record_ops. pid = global rank (role offset + rank), tid = StreamKind.
void write_chrome_trace(const StepProgram& program, const EngineResult& result, std::ostream& out);

}  // namespace fsdpx
