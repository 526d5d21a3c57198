// executor/launch/local_launcher.h — one node, N ranks: starts N copies of a program with the
// torchrun-style variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT, FSDPX_LAUNCHED=1) and supervises them: the first rank that fails or dies stops the
// others (SIGTERM, SIGKILL after a grace period), SIGINT/SIGTERM sent to the launcher reach every
// rank, and a launcher killed outright takes its ranks along. Leaves out restarts (torchrun's elastic
// mode), several nodes (srun/mpirun do that) and prefixed output: rank 0 keeps the terminal.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace fsdpx {

struct LocalLaunchOptions {
  std::string program;            // executable path (no PATH search); empty: /proc/self/exe
  std::vector<std::string> argv;  // argv of every rank, argv[0] included; empty: {program}
  int nprocs = 1;                 // ranks to start, usually one per visible GPU
  int master_port = 0;            // 0: a free port picked by binding port 0
  double grace_s = 5.0;           // from SIGTERM to SIGKILL when ranks are stopped
  // Output: rank 0 inherits stdout and stderr. Ranks 1..n-1 inherit stderr (errors from any rank
  // stay visible) and their stdout goes to /dev/null, or, when log_dir is set, both their stdout and
  // stderr go to <log_dir>/rank<r>.log.
  std::string log_dir;
  std::map<std::string, std::string> extra_env;  // set in every rank as well
};

struct RankExit {
  int rank = 0;
  pid_t pid = 0;
  int exit_status = -1;  // the status when it exited, -1 when a signal ended it
  int signal = 0;        // the signal that ended it, 0 when it exited
};

struct LaunchResult {
  std::vector<RankExit> ranks;  // indexed by rank
  int master_port = 0;
  int failed_rank = -1;    // the first rank seen to exit non-zero or die; -1: none
  int interrupted_by = 0;  // SIGINT or SIGTERM received by the launcher (and forwarded); 0: none
  // Empty on success, else one line: "rank 2 exited with status 1", "rank 1 was killed by signal 9
  // (Killed)", "interrupted by signal 2 (Interrupt); passed on to the 4 ranks".
  std::string message;

  bool ok() const { return failed_rank < 0 && interrupted_by == 0; }
  // What the launcher should exit with: 0, the failed rank's status, or 128 + signal (shell style).
  int exit_code() const;
};

// Starts the ranks, waits for all of them and reports how they ended. Throws ConfigError when the
// program cannot be executed or a log file cannot be written (ranks already started are killed).
// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread while it runs: call it from the main
// thread of a process whose other threads (if any) block them too.
LaunchResult launch_local(const LocalLaunchOptions& options);

// This process's argv from /proc/self/cmdline: what a process that launches copies of itself passes on.
std::vector<std::string> own_argv();

}  // namespace fsdpx
