// tools/cmd_demo.h — `fsdpx demo`, the main job on the embedded default (tools/cmd_demo.cpp); its two options
// (--format, -o) are registered in tools/cli_setup_runs.cpp. Leaves out CLI11.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

// Prints (or writes to `out` when not empty) the plan, the analytic bound and the simulated step.
void run_demo(OutputFormat format, const std::string& out);

}  // namespace fsdpx
