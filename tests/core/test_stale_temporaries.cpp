// tests/core/test_stale_temporaries.cpp — the output temporaries of a dead writer are removed by the next
// write in that directory; a live writer's (its pid alive, or its flock held) and other hosts' stay.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/output_file.h"
#include "core/stale_temporaries.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("fsdpx-stale-test-" + tag + "-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A pid that is certainly dead: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

fs::path touch(const fs::path& dir, const std::string& name) {
  std::ofstream(dir / name) << "partial";
  return dir / name;
}

TEST_CASE("stale temporaries: a dead writer's are removed by the next write; live and foreign ones stay") {
  TempDir d("mixed");
  const std::string host = host_name();
  const fs::path dead = touch(d.path, ".plan.json.tmp-" + host + "-" + std::to_string(dead_pid()) + "-AbC123");
  const fs::path live = touch(d.path, ".plan.json.tmp-" + owner_tag() + "-XyZ789");
  const fs::path foreign = touch(d.path, ".plan.json.tmp-other_host-" + std::to_string(dead_pid()) + "-AbC123");
  const fs::path old_style = touch(d.path, ".plan.json.tmp-AbC123");
  write_output_file((d.path / "plan.json").string(), "{}");
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(foreign));
  CHECK(fs::exists(old_style));
  CHECK(fs::exists(d.path / "plan.json"));
}

TEST_CASE("stale temporaries: a temporary whose lock is held stays even when its pid looks dead") {
  TempDir d("locked");
  const fs::path locked = touch(d.path, ".x.tmp-" + host_name() + "-" + std::to_string(dead_pid()) + "-Lock00");
  const int fd = ::open(locked.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);  // another PID namespace's writer, alive
  const pid_t child = ::fork();        // a separate process (flock is per open file, not per process)
  if (child == 0) ::_exit(remove_dead_output_temporaries(d.path.string()) == 0 && fs::exists(locked) ? 0 : 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  ::close(fd);
  CHECK(remove_dead_output_temporaries(d.path.string()) == 1);
  CHECK_FALSE(fs::exists(locked));
}

}  // namespace
}  // namespace fsdpx
