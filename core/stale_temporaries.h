// core/stale_temporaries.h — whose a temporary file is, and removing the ones whose writer died. A
// temporary's name carries its owner, "<host>-<pid>" (host with '-' replaced by '_'), and its writer
// holds an exclusive flock on it while the file is open. A later fsdpx in the same directory removes a
// temporary only when all three say its writer is gone: the host is this one, the pid is not alive, and
// the lock can be taken (flock also holds across PID namespaces, where a pid alone would mislead). So two
// concurrent runs never delete each other's files. Leaves out other hosts' temporaries on a shared
// file system (their pids mean nothing here) and names without an owner (older fsdpx versions).
#pragma once

#include <string>

namespace fsdpx {

std::string host_name();      // gethostname with '-' replaced by '_' ('-' separates a name's fields)
bool process_alive(long pid);  // kill(pid, 0) succeeds or is refused with EPERM
std::string owner_tag();      // "<host>-<pid>" of this process

// Takes an exclusive flock on `fd` without waiting; false when another open file holds one.
bool try_lock_exclusive(int fd);

// Removes, in `dir`, the output temporaries ".<name>.tmp-<host>-<pid>-XXXXXX" (core/output_file.h) of
// this host whose process is gone and whose lock is free. Scans each directory once per process;
// errors are ignored (a temporary that stays is harmless). Returns how many it removed.
int remove_dead_output_temporaries(const std::string& dir);

}  // namespace fsdpx
