// tools/cmd_simulate.cpp — `fsdpx simulate --plan P [--full] [--trace out.json] [--format text|json]`: one
// training step of a plan through the simulator: per-phase compute and exposed communication, memory at
// the peak, MFU (extrapolated from a probe where the step repeats, simulator/simulate_extrapolated.h;
// --full simulates every micro-batch); optionally a Chrome/Perfetto trace. `--program [--role R]` prints
// the step program of one pipeline rank instead, op by op with its simulated duration
// (tools/program_listing.h).
#include <cstdio>
#include <sstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/json_reader.h"
#include "core/output_file.h"
#include "simulator/simulate.h"
#include "simulator/simulate_extrapolated.h"
#include "simulator/trace.h"
#include "tools/cli_names.h"
#include "tools/cmd_simulate.h"
#include "tools/format.h"
#include "tools/main_output.h"
#include "tools/program_listing.h"
#include "tools/simulation_report.h"

namespace fsdpx {

void run_simulate(const SimulateOptions& o) {
  if (o.role_given && !o.program) throw ConfigError("--role picks the pipeline rank of --program; add --program");
  if (o.program && o.format == OutputFormat::json)
    throw ConfigError("--program prints a text table; drop --format json (--trace writes the timed ops as JSON)");
  const std::string path = resolve_config("plans", o.plan);
  const Plan plan = load_plan(path);
  EngineOptions eo;
  eo.overlap = !o.no_overlap;
  eo.record_ops = true;
  // The summary extrapolates the steady state from a probe (as exact as the whole step, independent of
  // the micro-batch count); a trace and the program listing need every op, so they simulate it whole.
  const bool whole = o.full || o.program || !o.trace.empty();
  const Simulation sim =
      with_errors_naming(path, "plan", [&] { return whole ? simulate(plan, eo) : simulate_fast(plan, eo); });
  if (!o.trace.empty()) {
    std::ostringstream trace;
    write_chrome_trace(sim.program, sim.engine, trace);
    write_output_file(o.trace, trace.str());
  }
  if (o.program) {
    emit_main_output(o.out, program_listing(sim.program, o.role));
  } else if (o.format == OutputFormat::json) {
    emit_main_output(o.out, simulation_json(plan, sim).dump(2) + "\n");
  } else {
    emit_main_output(o.out, simulation_text(plan, sim));
    if (!o.trace.empty()) std::printf("trace written to %s (open in ui.perfetto.dev or chrome://tracing)\n", o.trace.c_str());
  }
}

}  // namespace fsdpx
