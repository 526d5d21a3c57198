// core/input_file.h — how fsdpx reads a whole input file (data, token files, safetensors weights,
// checkpoint shards, JSON): only a regular file (a directory, device, FIFO or socket is refused with one
// line naming it), at most a documented number of bytes (refused from its size before any memory grows),
// read into one buffer of exactly that size. Leaves out streaming and memory mapping: inputs fit memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fsdpx {

// Upper bounds in bytes, by kind of input (docs/input-ranges.md, "Input files").
inline constexpr std::uint64_t kMaxDataFileBytes = std::uint64_t{4} << 30;       // --data: text or tokens
inline constexpr std::uint64_t kMaxWeightsFileBytes = std::uint64_t{1} << 40;    // safetensors, shards

// The contents of `path`. `what` names the input in messages ("data file", "weights file"). Throws
// ConfigError "<path>: ..." when the path is missing, not a regular file, larger than `max_bytes`, or
// changes size while read.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes);

// Throws the same ConfigError as read_input_file when `path` exists and is not a regular file
// ("<path>: a directory, not a <what>"); returns without a check when it does not exist.
void check_regular_input(const std::string& path, std::string_view what);

}  // namespace fsdpx
