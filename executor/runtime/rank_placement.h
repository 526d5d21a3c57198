// executor/runtime/rank_placement.h — where the ranks of one run live, as the code that places them
// (executor/session/cpu_placement.h, executor/cuda_backend/cuda_placement.h) reports it: the backends
// of this process's ranks, or the exit status when this process only launched the others, and whether
// it prints and holds every shard. Leaves out how they got there (threads, launchers, rendezvous).
#pragma once

#include <optional>
#include <string>

#include "executor/runtime/rank_backend.h"
#include "executor/runtime/runtime_program.h"

namespace fsdpx {

struct RankPlacement {
  ExecutorDevice device = ExecutorDevice::cpu;
  RankBackendFactory backends;       // this process's ranks; empty: the CPU backend, every rank a thread
  std::optional<int> launcher_exit;  // set: this process launched the ranks; exit with this status
  std::string launcher_message;      // why the launch failed (empty when it did not)
  bool prints = true;                // false on ranks other than 0 of a multi-process job
  bool whole_state = true;           // every shard owner runs in this process (false: one process per rank)
  int processes_on_host = 1;         // processes sharing this host's cores (the CPU thread budget's)
  std::string job_id;                // launch_job_id of a launched job; empty when not launched
  std::string description;           // one line: where the ranks run (empty for CPU threads)
};

}  // namespace fsdpx
