// tools/cmd_calibrate.h — `fsdpx calibrate`'s options as parsed (tools/cli_setup_runs.cpp registers them) and
// the command itself (tools/cmd_calibrate.cpp). Leaves out CLI11.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

struct CalibrateOptions {
  std::string profile;
  std::string trace;
  std::string plan;
  std::string output;
  std::string plan_out;
  std::string name;
  OutputFormat format = OutputFormat::text;
};

void run_calibrate(const CalibrateOptions& o);

}  // namespace fsdpx
