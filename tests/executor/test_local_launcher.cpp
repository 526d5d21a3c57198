// tests/executor/test_local_launcher.cpp — the one-node launcher with /bin/sh ranks and the
// launch_helper program: the variables reach every rank, the first failure (exit status or signal)
// is reported by rank and stops the siblings (SIGTERM, then SIGKILL for ranks that ignore it), a
// SIGTERM to the launcher is passed on, ranks of a SIGKILLed launcher end too, exec errors are
// ConfigErrors, and ranks really meet through the rendezvous at the port the launcher picked.
#include <doctest/doctest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/errors.h"
#include "executor/launch/local_launcher.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A fresh empty folder for one test's files.
fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("fsdpx-test-launch-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LocalLaunchOptions shell(int nprocs, const std::string& script, double grace_s = 5.0) {
  LocalLaunchOptions o;
  o.program = "/bin/sh";
  o.argv = {"sh", "-c", script};
  o.nprocs = nprocs;
  o.grace_s = grace_s;
  return o;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("local launcher: every rank gets the torchrun-style variables and a free port") {
  const fs::path dir = temp_dir("env");
  LocalLaunchOptions o = shell(3, "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR "
                                  "$MASTER_PORT $FSDPX_LAUNCHED $EXTRA\" > \"$OUT_DIR/rank$RANK\"");
  o.extra_env = {{"OUT_DIR", dir.string()}, {"EXTRA", "x"}, {"RANK", "overridden"}};
  const LaunchResult r = launch_local(o);
  CHECK(r.ok());
  CHECK(r.exit_code() == 0);
  CHECK(r.message.empty());
  CHECK(r.master_port > 0);
  REQUIRE(r.ranks.size() == 3);
  for (int rank = 0; rank < 3; ++rank) {
    CAPTURE(rank);
    CHECK(r.ranks[std::size_t(rank)].exit_status == 0);
    const std::string r_text = std::to_string(rank);
    CHECK(read_file(dir / ("rank" + r_text)) ==
          r_text + " " + r_text + " 3 3 127.0.0.1 " + std::to_string(r.master_port) + " 1 x\n");
  }
  fs::remove_all(dir);
}

TEST_CASE("local launcher: a rank's exit status is reported by rank; the others end normally") {
  const LaunchResult r = launch_local(shell(3, "exit $((RANK == 1 ? 3 : 0))"));
  CHECK_FALSE(r.ok());
  CHECK(r.failed_rank == 1);
  CHECK(r.message == "rank 1 exited with status 3");
  CHECK(r.exit_code() == 3);
}

TEST_CASE("local launcher: a rank killed by a signal stops its siblings at once") {
  const auto start = Clock::now();
  const LaunchResult r = launch_local(shell(3, "if [ $RANK = 2 ]; then kill -9 $$; fi; exec sleep 30"));
  CHECK(seconds_since(start) < 3.0);
  CHECK(r.failed_rank == 2);
  CHECK(r.message == "rank 2 was killed by signal 9 (Killed)");
  CHECK(r.exit_code() == 128 + 9);
  CHECK(r.ranks[0].signal == SIGTERM);
  CHECK(r.ranks[1].signal == SIGTERM);
}

TEST_CASE("local launcher: siblings that ignore SIGTERM are killed after the grace period") {
  const fs::path dir = temp_dir("grace");
  // Ranks 0 and 2 ignore SIGTERM (their sleep inherits that), then say so; rank 1 then fails.
  LocalLaunchOptions o = shell(3,
                               "cd \"$OUT_DIR\"; trap '' TERM; if [ $RANK != 1 ]; then touch ready$RANK; "
                               "exec sleep 30; fi; while [ ! -e ready0 ] || [ ! -e ready2 ]; do sleep 0.02; "
                               "done; exit 4",
                               0.3);
  o.extra_env = {{"OUT_DIR", dir.string()}};
  const auto start = Clock::now();
  const LaunchResult r = launch_local(o);
  CHECK(seconds_since(start) < 3.0);
  CHECK(r.message == "rank 1 exited with status 4");
  CHECK(r.ranks[0].signal == SIGKILL);
  CHECK(r.ranks[2].signal == SIGKILL);
  fs::remove_all(dir);
}

TEST_CASE("local launcher: SIGTERM to the launcher reaches every rank") {
  const fs::path dir = temp_dir("signal");
  LocalLaunchOptions o = shell(2, "touch \"$OUT_DIR/started$RANK\"; exec sleep 30", 1.0);
  o.extra_env = {{"OUT_DIR", dir.string()}};
  const pthread_t launcher = pthread_self();
  std::atomic<bool> sent{false};
  // Once both ranks run, launch_local has blocked SIGTERM in this thread: it waits for it there.
  std::thread killer([&] {
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (!(fs::exists(dir / "started0") && fs::exists(dir / "started1")) && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    sent = pthread_kill(launcher, SIGTERM) == 0;
  });
  const auto start = Clock::now();
  const LaunchResult r = launch_local(o);
  killer.join();
  CHECK(sent);
  CHECK(seconds_since(start) < 4.0);
  CHECK(r.interrupted_by == SIGTERM);
  CHECK(r.failed_rank == -1);
  CHECK(r.message == "interrupted by signal 15 (Terminated); passed on to the 2 ranks");
  CHECK(r.exit_code() == 128 + 15);
  CHECK(r.ranks[0].signal == SIGTERM);
  CHECK(r.ranks[1].signal == SIGTERM);
  fs::remove_all(dir);
}

// True once `pid` has ended (gone, or a zombie waiting for whoever adopted it).
bool process_ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  return !(stat >> pid_field >> name >> state) || state == "Z";
}

TEST_CASE("local launcher: ranks end when the launcher is killed with SIGKILL") {
  const fs::path dir = temp_dir("orphans");
  std::fflush(nullptr);
  const pid_t launcher = ::fork();
  if (launcher == 0) {  // a launcher process of its own, to be killed
    LocalLaunchOptions o = shell(2, "echo $$ > \"$OUT_DIR/pid$RANK.tmp\"; mv \"$OUT_DIR/pid$RANK.tmp\" "
                                    "\"$OUT_DIR/pid$RANK\"; exec sleep 30");
    o.extra_env = {{"OUT_DIR", dir.string()}};
    launch_local(o);
    ::_exit(0);
  }
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (!(fs::exists(dir / "pid0") && fs::exists(dir / "pid1")) && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  const pid_t rank0 = std::stoi(read_file(dir / "pid0")), rank1 = std::stoi(read_file(dir / "pid1"));
  while (!(process_ended(rank0) && process_ended(rank1)) && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(process_ended(rank0));
  CHECK(process_ended(rank1));
  fs::remove_all(dir);
}

TEST_CASE("local launcher: a program that cannot run is a ConfigError; logs go to log_dir") {
  LocalLaunchOptions bad = shell(2, "true");
  bad.program = "/nonexistent/fsdpx";
  CHECK_THROWS_WITH_AS(launch_local(bad), "cannot execute '/nonexistent/fsdpx': No such file or directory",
                       ConfigError);

  const fs::path dir = temp_dir("logs");
  LocalLaunchOptions o = shell(2, "if [ $RANK != 0 ]; then echo out$RANK; echo err$RANK >&2; fi");
  o.log_dir = dir.string();
  CHECK(launch_local(o).ok());
  CHECK(read_file(dir / "rank1.log") == "out1\nerr1\n");
  CHECK_FALSE(fs::exists(dir / "rank0.log"));  // rank 0 keeps the terminal
  bad = o;
  bad.log_dir = (dir / "missing").string();
  CHECK_THROWS_WITH_AS(launch_local(bad), doctest::Contains("missing/rank1.log': No such file"), ConfigError);
  fs::remove_all(dir);
}

TEST_CASE("local launcher + rendezvous: 4 processes meet and get the id; a rank that dies stops them") {
  const fs::path dir = temp_dir("helper");
  LocalLaunchOptions o;
  o.program = FSDPX_LAUNCH_HELPER;
  o.nprocs = 4;
  o.extra_env = {{"OUT_DIR", dir.string()}};
  const LaunchResult r = launch_local(o);
  CHECK(r.ok());
  for (int rank = 0; rank < 4; ++rank)
    CHECK(read_file(dir / ("rank" + std::to_string(rank) + ".txt")) ==
          "fsdpx rank " + std::to_string(rank) + " of 4: id ok, exchange ok\n");

  // Rank 2 exits before the rendezvous; the others, waiting there for it, are stopped at once.
  o.argv = {"launch_helper", "exit-before-join", "2"};
  o.log_dir = dir.string();  // ranks 1 and 3 may report rank 0's end before their own SIGTERM
  const auto start = Clock::now();
  const LaunchResult failed = launch_local(o);
  CHECK(seconds_since(start) < 3.0);
  CHECK(failed.message == "rank 2 exited with status 5");
  CHECK(failed.ranks[0].signal == SIGTERM);
  fs::remove_all(dir);
}

}  // namespace fsdpx
