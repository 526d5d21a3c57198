// executor/launch/child_process.cpp — fork/exec of one rank (see child_process.h). Everything the
// child needs (argv, envp, descriptors) is built before fork(): between fork and exec the child only
// makes async-signal-safe calls, which is what POSIX allows in a child of a multi-threaded process.
#include "executor/launch/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/launch/socket_io.h"

extern char** environ;

namespace fsdpx {
namespace {

std::vector<std::string> child_environment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (set.find(name) == set.end()) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

net::Fd open_output(const std::string& path) {
  if (path.empty()) return net::Fd{};
  net::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  return fd;
}

// In the child, after fork: only async-signal-safe calls until execve.
[[noreturn]] void exec_child(const char* program, char* const* argv, char* const* envp, int out_fd,
                             int err_fd, int report_fd, const sigset_t& mask, pid_t parent) {
  ::setpgid(0, 0);
  // A launcher killed with SIGKILL cannot stop its ranks: the kernel sends them SIGTERM instead
  // (when the forking thread ends; the launcher forks from its main thread).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
  ::execve(program, argv, envp);
  const int err = errno;
  [[maybe_unused]] const ssize_t n = ::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

// 0 once the child has exec'd (the pipe closed), else the errno of its failed execve.
int exec_result(int report_fd) {
  int err = 0;
  for (;;) {
    const ssize_t n = ::read(report_fd, &err, sizeof err);
    if (n >= 0) return n == ssize_t(sizeof err) ? err : 0;
    if (errno != EINTR) return 0;
  }
}

}  // namespace

pid_t spawn_child(const ChildSpec& spec, const sigset_t& child_mask) {
  std::vector<std::string> argv_strings = spec.argv.empty() ? std::vector{spec.program} : spec.argv;
  std::vector<std::string> env_strings = child_environment(spec.env_set);
  const std::vector<char*> argv = pointers(argv_strings);
  const std::vector<char*> envp = pointers(env_strings);
  const net::Fd out = open_output(spec.stdout_path);
  const net::Fd err = spec.stderr_path == spec.stdout_path ? net::Fd{} : open_output(spec.stderr_path);
  const int err_fd = spec.stderr_path.empty() ? -1 : (err ? err.get() : out.get());
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  const net::Fd report_read(report[0]);
  net::Fd report_write(report[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0)
    exec_child(spec.program.c_str(), argv.data(), envp.data(), out ? out.get() : -1, err_fd,
               report[1], child_mask, parent);
  ::setpgid(pid, pid);  // also here, so the group exists before the parent signals it
  report_write.reset();
  if (const int e = exec_result(report_read.get()); e != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw ConfigError(fmt::format("cannot execute '{}': {}", spec.program, std::strerror(e)));
  }
  return pid;
}

}  // namespace fsdpx
