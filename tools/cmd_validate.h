// tools/cmd_validate.h — `fsdpx validate`'s options as parsed (tools/cli_setup_plans.cpp registers them) and
// the command itself (tools/cmd_validate.cpp). Leaves out CLI11.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

struct ValidateOptions {
  std::string cases;
  std::string positional;
  std::string write_plans;  // folder for each simulated case's plan (reproduce one with `fsdpx simulate`)
  std::string write_interval;  // the 80% band of this file's errors (simulator/interval_file.h)
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
};

void run_validate(const ValidateOptions& o);

}  // namespace fsdpx
