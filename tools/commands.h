// tools/commands.h — one setup function per subcommand (CLI11's subcommand-in-files layout): each
// registers its options and a callback that runs it. Callbacks throw ConfigError on bad input; main
// turns that into one line on stderr and exit status 2.
#pragma once

#include <CLI/CLI.hpp>

#include "tools/exit_with.h"

namespace fsdpx {

void setup_estimate(CLI::App& app);
void setup_demo(CLI::App& app);
void setup_simulate(CLI::App& app);
void setup_explain_memory(CLI::App& app);
void setup_validate(CLI::App& app);
void setup_plan(CLI::App& app);
void setup_report(CLI::App& app);
void setup_export(CLI::App& app);
void setup_run(CLI::App& app);
void setup_calibrate(CLI::App& app);
void setup_compare(CLI::App& app);
void setup_sample(CLI::App& app);
void setup_export_hf(CLI::App& app);
void setup_completion(CLI::App& app);  // last: it lists the others

}  // namespace fsdpx
