// executor/launch/child_process.h — starts one rank for the local launcher: fork + execve with this
// environment plus overrides, stdout/stderr optionally to a file, the child leading its own process group
// (a signal reaches all it starts) and getting SIGTERM if the launcher dies (PR_SET_PDEATHSIG). Exec
// failures come back through a close-on-exec pipe as errors, not as a silent status 127. Leaves out
// waiting and signalling (local_launcher.cpp) and PATH lookup.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace fsdpx {

struct ChildSpec {
  std::string program;                          // path given to execve
  std::vector<std::string> argv;                // argv[0] included
  std::map<std::string, std::string> env_set;   // added to (or replacing in) this process's environment
  std::string stdout_path;                      // empty: inherited
  std::string stderr_path;                      // empty: inherited; may equal stdout_path (one file)
};

// Forks and execs `spec`; the child starts with signal mask `child_mask`. Returns its pid (also its
// process group id). Throws ConfigError when a file cannot be opened or the program cannot be
// executed (that child is reaped first).
pid_t spawn_child(const ChildSpec& spec, const sigset_t& child_mask);

}  // namespace fsdpx
