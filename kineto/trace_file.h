// kineto/trace_file.h — the bytes of one profiler trace file: plain JSON or gzip (detected by the gzip magic
// bytes, not the name), and the trace files of a directory (one per rank, as torchtitan and
// torch.profiler.tensorboard_trace_handler write them). Leaves out parsing: kineto_trace.h does that.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsdpx {

// Largest decompressed trace read (a rank's trace of a few steps of a large model is hundreds of MB).
inline constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{4} << 30;

// The whole text of `path`, gunzipped when it is gzip. A missing, unreadable or truncated file, or one over
// kMaxTraceBytes, is a ConfigError naming `path`.
std::string read_trace_text(const std::string& path);

// `path` itself when it is a file; otherwise the files of directory `path` whose names end in ".json" or
// ".json.gz", sorted by name. A directory without any is a ConfigError naming it.
std::vector<std::string> trace_files(const std::string& path);

}  // namespace fsdpx
