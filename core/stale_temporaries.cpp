// core/stale_temporaries.cpp — owner tags, liveness and the cleanup of dead writers' temporaries. See
// stale_temporaries.h.
#include "core/stale_temporaries.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

// True the first time this process asks about `dir`.
bool first_scan_of(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> scanned;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  std::lock_guard<std::mutex> lock(mu);
  return scanned.insert(ec ? dir : canonical.string()).second;
}

// The temporary's writer is gone: its pid is dead and nobody holds its lock.
bool writer_gone(const fs::path& p, long pid) {
  if (process_alive(pid)) return false;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  const bool free = try_lock_exclusive(fd);
  ::close(fd);
  return free;
}

}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  std::string h(buf);
  std::replace(h.begin(), h.end(), '-', '_');
  return h;
}

bool process_alive(long pid) { return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM); }

std::string owner_tag() { return fmt::format("{}-{}", host_name(), ::getpid()); }

bool try_lock_exclusive(int fd) {
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    if (errno != EINTR) return false;
  return true;
}

int remove_dead_output_temporaries(const std::string& dir) {
  if (!first_scan_of(dir)) return 0;
  static const std::regex kName(R"(\..+\.tmp-(.+)-([0-9]+)-[A-Za-z0-9]{6})");
  const std::string host = host_name();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (!std::regex_match(name, m, kName) || m[1] != host || !it->is_regular_file(ec)) continue;
    const std::string digits = m[2];
    long pid = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), pid).ec != std::errc()) continue;
    if (writer_gone(it->path(), pid)) stale.push_back(it->path());
  }
  int removed = 0;
  for (const fs::path& p : stale) removed += fs::remove(p, ec) ? 1 : 0;
  return removed;
}

}  // namespace fsdpx
