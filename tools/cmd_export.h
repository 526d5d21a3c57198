// tools/cmd_export.h — `fsdpx export`'s options as parsed (tools/cli_setup_plans.cpp registers them) and the
// command itself (tools/cmd_export.cpp). Leaves out CLI11.
#pragma once

#include <string>

namespace fsdpx {

enum class ExportFormat { torchtitan };

struct ExportOptions {
  std::string plan, out, target;
  ExportFormat format = ExportFormat::torchtitan;
};

void run_export(const ExportOptions& o);

}  // namespace fsdpx
