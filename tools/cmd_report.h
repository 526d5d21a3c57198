// tools/cmd_report.h — `fsdpx report`'s options as parsed (tools/cli_setup_runs.cpp registers them) and the
// command itself (tools/cmd_report.cpp). Leaves out CLI11: the command's code compiles without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/cli_names.h"

namespace fsdpx {

struct ReportOptions {
  std::string plan, model, cluster, html, csv, scaling = "weak", train_tokens, target = "fsdpx";
  OutputFormat format = OutputFormat::text;
  std::optional<int> nodes, world_size;
  std::optional<std::int64_t> seq, global_batch;
  std::optional<double> memory_limit_gib;
  std::vector<std::string> vary;
};

void run_report(const ReportOptions& o);

}  // namespace fsdpx
