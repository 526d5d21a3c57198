// tools/write_whole.h — writes a command's output file whole or not at all: a temporary name beside it,
// written and fsynced, then renamed over the target (POSIX rename is atomic).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/checkpoint/shard_file.h"

namespace fsdpx {

inline void write_file_whole(const std::string& path, std::string_view bytes) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  write_file_durable(tmp, bytes);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("{}: cannot rename {} over it: {}", path, tmp, std::strerror(err)));
  }
}

}  // namespace fsdpx
