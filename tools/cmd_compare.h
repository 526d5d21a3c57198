// tools/cmd_compare.h — `fsdpx compare`'s options as parsed (tools/cli_setup_runs.cpp registers them) and the
// command itself (tools/cmd_compare.cpp). Leaves out CLI11.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

struct CompareOptions {
  std::string plan;
  std::string profile;
  std::string trace;  // a PyTorch profiler trace file or directory of them
  std::string predicted_trace;  // with --plan --trace: write the simulated step in Kineto's layout here
  std::string html;
  int top = 20;  // op rows in text; 0: all
  OutputFormat format = OutputFormat::text;
};

void run_compare(const CompareOptions& o);

}  // namespace fsdpx
