// core/input_file.cpp — bounded reads of regular input files (POSIX open, fstat, read). See input_file.h.
#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void not_regular(const std::string& path, std::string_view what, mode_t mode) {
  throw ConfigError(fmt::format("{}: {}, not a {} (fsdpx reads inputs from regular files)", path, kind_of(mode), what));
}

// Closes the descriptor on every path out of read_input_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void check_regular_input(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) not_regular(path, what, st.st_mode);
}

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever before fstat can refuse it.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) throw ConfigError(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw ConfigError(fmt::format("{}: cannot inspect {}: {}", path, what, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) not_regular(path, what, st.st_mode);
  const auto size = std::uint64_t(st.st_size);
  if (size > max_bytes)
    throw ConfigError(fmt::format("{}: {} bytes, more than the {} MiB a {} may have", path, size, max_bytes >> 20, what));
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(f.fd, bytes.data() + done, size - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw ConfigError(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
    if (n == 0) break;
    done += std::size_t(n);
  }
  char extra = 0;
  if (done != size || ::read(f.fd, &extra, 1) > 0)
    throw ConfigError(fmt::format("{}: changed size while being read ({} bytes expected)", path, size));
  return bytes;
}

}  // namespace fsdpx
