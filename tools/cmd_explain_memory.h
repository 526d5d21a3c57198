// tools/cmd_explain_memory.h — `fsdpx explain-memory`'s options as parsed (tools/cli_setup_runs.cpp registers
// them) and the command itself (tools/cmd_explain_memory.cpp). Leaves out CLI11.
#pragma once

#include <string>

#include "tools/cli_names.h"

namespace fsdpx {

struct ExplainMemoryOptions {
  std::string plan;
  OutputFormat format = OutputFormat::text;
  std::string out;
};

void run_explain_memory(const ExplainMemoryOptions& o);

}  // namespace fsdpx
