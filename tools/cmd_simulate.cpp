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
#include "tools/cli_options.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/main_output.h"
#include "tools/program_listing.h"
#include "tools/simulation_report.h"

namespace fsdpx {

namespace {

struct SimulateOptions {
  std::string plan;
  std::string trace;
  bool no_overlap = false;
  bool program = false;  // print the step program instead of the summary
  bool full = false;     // simulate every micro-batch (a trace or the program listing does too)
  int role = 0;
  bool role_given = false;
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
};

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

}  // namespace

void setup_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand("simulate", "Simulate one training step of a plan");
  sub->add_option("--plan", o->plan, "Plan JSON file (or a name under configs/plans)")->required();
  sub->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of the step to this file");
  sub->add_flag("--no-overlap", o->no_overlap, "Run every op of a rank one after another (analytic check)");
  sub->add_flag("--full", o->full,
                "Simulate every micro-batch (default: a probe of a few, the repeating steady state extrapolated)");
  sub->add_flag("--program", o->program,
                "Print the step program of one pipeline rank, op by op (stream, kind, unit, micro-batch, group, bytes, "
                "effects, dependencies, simulated time)");
  sub->add_option_function<int>("--role", [o](int r) { o->role = r, o->role_given = true; },
                                "With --program: the pipeline rank to print (default 0)");
  add_enum_option(sub, "--format", o->format, kOutputFormats, "text or json");
  add_main_output_option(sub, o->out);
  sub->callback([o] { run_simulate(*o); });
}

}  // namespace fsdpx
