// executor/launch/local_launcher.cpp — starts and supervises the ranks of one node (see
// local_launcher.h). The launcher blocks SIGCHLD, SIGINT and SIGTERM and takes them synchronously
// with sigtimedwait(), so there is no signal handler and no shared flag; it polls waitpid() for its
// own children only, never waitpid(-1), and signals each rank's whole process group.
#include "executor/launch/local_launcher.h"

#include <pthread.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/launch/child_process.h"
#include "executor/launch/socket_io.h"

namespace fsdpx {
namespace {

// Blocks the launcher's signals in this thread for its lifetime; the children get the old mask.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&set_, sig);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  const sigset_t& set() const { return set_; }
  const sigset_t& old() const { return old_; }

 private:
  sigset_t set_, old_;
};

std::string describe_end(const RankExit& e) {
  if (e.signal != 0)
    return fmt::format("rank {} was killed by signal {} ({})", e.rank, e.signal, strsignal(e.signal));
  return fmt::format("rank {} exited with status {}", e.rank, e.exit_status);
}

ChildSpec rank_spec(const LocalLaunchOptions& o, int rank, int port) {
  ChildSpec spec;
  spec.program = o.program.empty() ? "/proc/self/exe" : o.program;
  spec.argv = o.argv;
  spec.env_set = o.extra_env;
  const std::string r = std::to_string(rank), n = std::to_string(o.nprocs);
  const std::pair<const char*, std::string> vars[] = {
      {"RANK", r}, {"LOCAL_RANK", r}, {"WORLD_SIZE", n}, {"LOCAL_WORLD_SIZE", n},
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}, {"FSDPX_LAUNCHED", "1"}};
  for (const auto& [name, value] : vars) spec.env_set.insert_or_assign(name, value);
  if (rank > 0 && o.log_dir.empty()) spec.stdout_path = "/dev/null";
  if (rank > 0 && !o.log_dir.empty())
    spec.stdout_path = spec.stderr_path = fmt::format("{}/rank{}.log", o.log_dir, rank);
  return spec;
}

// Waits for the ranks; stops all of them once one fails or the launcher is interrupted.
class Supervisor {
 public:
  Supervisor(LaunchResult& result, double grace_s)
      : r_(result), grace_s_(grace_s), alive_(result.ranks.size(), true) {}

  void run(const sigset_t& signals) {
    while (reap() > 0) {
      if (stopping_ && !killed_ && net::ms_until(kill_at_) == 0) {
        signal_alive(SIGKILL);  // the grace period is over
        killed_ = true;
      }
      const int wait_ms = stopping_ && !killed_ ? std::min(50, net::ms_until(kill_at_)) : 50;
      const timespec ts{0, long(wait_ms) * 1000000L};
      const int sig = sigtimedwait(&signals, nullptr, &ts);
      if (sig == SIGINT || sig == SIGTERM) on_launcher_signal(sig);
    }
  }

 private:
  // Collects the ranks that ended; returns how many are still running.
  int reap() {
    int running = 0;
    for (std::size_t i = 0; i < r_.ranks.size(); ++i) {
      if (!alive_[i]) continue;
      RankExit& e = r_.ranks[i];
      int status = 0;
      pid_t got = 0;
      while ((got = ::waitpid(e.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
      }
      if (got != e.pid) {
        ++running;
        continue;
      }
      alive_[i] = false;
      e.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      e.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!stopping_ && (e.signal != 0 || e.exit_status != 0)) {
        r_.failed_rank = e.rank;
        r_.message = describe_end(e);
        stop(SIGTERM);
      }
    }
    return running;
  }

  void on_launcher_signal(int sig) {
    if (stopping_ && !killed_ && r_.interrupted_by != 0) {  // asked twice: no more grace
      signal_alive(SIGKILL);
      killed_ = true;
      return;
    }
    if (r_.interrupted_by == 0 && r_.failed_rank < 0) {
      r_.interrupted_by = sig;
      r_.message = fmt::format("interrupted by signal {} ({}); passed on to the {} ranks", sig,
                               strsignal(sig), r_.ranks.size());
    }
    stop(sig);
  }

  void stop(int sig) {
    if (!stopping_) kill_at_ = net::deadline_after(grace_s_);
    stopping_ = true;
    signal_alive(sig);
  }

  void signal_alive(int sig) {
    for (std::size_t i = 0; i < r_.ranks.size(); ++i)
      if (alive_[i]) ::kill(-r_.ranks[i].pid, sig);  // the rank's process group (child_process.h)
  }

  LaunchResult& r_;
  double grace_s_;
  std::vector<bool> alive_;
  bool stopping_ = false, killed_ = false;
  net::Deadline kill_at_{};
};

}  // namespace

int LaunchResult::exit_code() const {
  if (failed_rank >= 0) {
    const RankExit& e = ranks[std::size_t(failed_rank)];
    return e.signal != 0 ? 128 + e.signal : e.exit_status;
  }
  return interrupted_by != 0 ? 128 + interrupted_by : 0;
}

LaunchResult launch_local(const LocalLaunchOptions& options) {
  FSDP_CHECK(options.nprocs >= 1, "launch_local: nprocs must be >= 1");
  LaunchResult result;
  result.master_port = options.master_port > 0 ? options.master_port : net::pick_free_port();
  const BlockedSignals blocked;
  for (int rank = 0; rank < options.nprocs; ++rank) {
    try {
      const pid_t pid = spawn_child(rank_spec(options, rank, result.master_port), blocked.old());
      result.ranks.push_back(RankExit{rank, pid, -1, 0});
    } catch (...) {
      for (const RankExit& e : result.ranks) ::kill(-e.pid, SIGKILL);
      for (const RankExit& e : result.ranks)
        while (::waitpid(e.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      throw;
    }
  }
  Supervisor(result, options.grace_s).run(blocked.set());
  return result;
}

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char c : all) {
    if (c == '\0') argv.push_back(std::move(cur)), cur.clear();
    else cur += c;
  }
  return argv;
}

}  // namespace fsdpx
