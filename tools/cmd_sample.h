// tools/cmd_sample.h — `fsdpx sample`'s options as parsed (tools/cli_setup_runs.cpp registers them) and the
// command itself (tools/cmd_sample.cpp). Leaves out CLI11.
#pragma once

#include <string>

#include "executor/model/sampler.h"
#include "tools/cli_names.h"

namespace fsdpx {

struct SampleCliOptions {
  std::string checkpoint;
  std::string prompt = "In the beginning";
  SampleOptions sample;
  OutputFormat format = OutputFormat::text;
  std::string out;  // -o
};

void run_sample(const SampleCliOptions& o);

}  // namespace fsdpx
