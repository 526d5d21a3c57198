// tools/cmd_export_hf.h — `fsdpx export-hf`'s options as parsed (tools/cli_setup_runs.cpp registers them) and
// the command itself (tools/cmd_export_hf.cpp). Leaves out CLI11.
#pragma once

#include <string>

namespace fsdpx {

struct ExportHfOptions {
  std::string checkpoint;
  std::string output;
};

void run_export_hf(const ExportHfOptions& o);

}  // namespace fsdpx
