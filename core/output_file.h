// core/output_file.h — how fsdpx writes files. Every output (plans, traces, exports, reports, weights,
// profiles, calibrated clusters, case plans, token files) goes through write_output_file: the bytes go to
// a temporary file in the target's directory, are written whole, fsynced and closed with every error
// checked, then renamed over the target and the directory fsynced. So the target holds either its old
// content or all of the new, also on a full disk or after a crash; a target that exists and is not a
// regular file (a device node, a FIFO, a directory) is refused, never replaced. Checkpoints use the
// lower-level pieces (write_file_durable, fsync_directory) inside a directory they rename as a whole.
// Leaves out streaming writes: outputs are built in memory first.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace fsdpx {

// An output could not be written (disk full, no permission, not a regular file). Not an input error:
// main prints it and exits 1. The message names the path and says the old file is unchanged.
struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Replaces `path` with `bytes` atomically and durably (see above). A symbolic link is kept: the file it
// points to is replaced. Throws WriteError.
void write_output_file(const std::string& path, std::string_view bytes);

// Checks that `path` can be written by write_output_file: its directory exists and a temporary file can
// be created there, and the target is absent or a regular file. For commands that produce the output
// after long work (fsdpx run). Throws WriteError.
void check_output_writable(const std::string& path);

// Writes `bytes` to `path` (created or truncated) and fsyncs it. Not atomic by itself: for files inside a
// temporary directory that is renamed into place afterwards. Throws WriteError.
void write_file_durable(const std::string& path, std::string_view bytes);
// fsync of a directory, so that the names created or renamed in it survive a crash (POSIX rename is
// atomic but only durable once the parent directory is synced; ext4 and XFS behave so). Throws WriteError.
void fsync_directory(const std::string& path);

}  // namespace fsdpx
