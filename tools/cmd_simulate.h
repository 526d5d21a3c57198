// tools/cmd_simulate.h — `fsdpx simulate`'s options as parsed (tools/cli_setup_plans.cpp registers them) and
// the command itself (tools/cmd_simulate.cpp). Leaves out CLI11: the command's code compiles without it.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

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

void run_simulate(const SimulateOptions& o);

}  // namespace fsdpx
