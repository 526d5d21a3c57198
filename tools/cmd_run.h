// tools/cmd_run.h — `fsdpx run`'s options as parsed (tools/cli_setup_runs.cpp registers them) and the command
// itself (tools/cmd_run.cpp). Leaves out CLI11: the command's code compiles without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/executor_device.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/session/training_session.h"
#include "tools/cli_names.h"
#include "tools/run_trace.h"

namespace fsdpx {

struct RunOptions {
  std::string plan;
  std::optional<std::uint64_t> seed;
  std::string profile;            // file for the profile JSON; empty: none
  RunTraceOptions trace;
  ExecutorDevice backend = ExecutorDevice::cpu;
  bool processes = false;       // --backend cpu: one process per rank on this node
  bool single_process = false;  // --backend cuda: every rank as a thread on GPU 0
  double comm_timeout_s = kDefaultCommTimeoutS;  // --processes: collective waits and peer silence
  SessionOptions session;
  OutputFormat format = OutputFormat::text;
};

// By value: the run fills in what the plan leaves to it.
void run_run(RunOptions o);

}  // namespace fsdpx
