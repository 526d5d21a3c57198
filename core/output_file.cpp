// core/output_file.cpp — atomic, durable, checked writes of output files (POSIX: mkostemp, write, fsync,
// close, rename, fsync of the directory). See output_file.h.
#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/stale_temporaries.h"

namespace fsdpx {

namespace {

namespace fs = std::filesystem;

constexpr mode_t kNewFileMode = 0644;

[[noreturn]] void fail(const std::string& path, std::string_view what, int err) {
  throw WriteError(fmt::format("{}: {}: {}", path, what, std::strerror(err)));
}

// A failure of write_output_file before its rename: the target was not touched.
[[noreturn]] void fail_kept(const std::string& path, std::string_view what, int err) {
  fail(path, fmt::format("{} (a file already there is unchanged)", what), err);
}

// The regular file to replace: `path` itself, or the file a symbolic link points to (the link is kept).
// Sets `mode` to the existing file's permissions, or kNewFileMode.
std::string target_of(const std::string& path, mode_t& mode) {
  mode = kNewFileMode;
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return target;
    fail_kept(path, "cannot inspect", errno);
  }
  if (S_ISLNK(st.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) fail_kept(path, "symbolic link to nothing that can be written", errno);
    target = real;
    std::free(real);
    if (::stat(target.c_str(), &st) != 0) fail_kept(path, "cannot inspect", errno);
  }
  if (!S_ISREG(st.st_mode))
    throw WriteError(fmt::format("{}: not a regular file (a device, FIFO or directory): fsdpx writes an output "
                                 "whole by replacing a regular file and leaves this one alone",
                                 path));
  mode = st.st_mode & 07777;
  return target;
}

std::string directory_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

// A temporary file next to `target`: ".<name>.tmp-<host>-<pid>-XXXXXX" (the name cut so the whole fits
// NAME_MAX), locked (flock, on a second descriptor that stays open until it is renamed or removed) so that
// a later fsdpx removes it only once this process is gone (core/stale_temporaries.h). Before creating
// one, removes the dead writers' temporaries in that directory.
class TempFile {
 public:
  TempFile(const std::string& target, const std::string& shown_path) {
    const std::string dir = directory_of(target);
    remove_dead_output_temporaries(dir);
    const std::string suffix = ".tmp-" + owner_tag() + "-XXXXXX";
    const std::size_t room = NAME_MAX > 1 + suffix.size() ? NAME_MAX - 1 - suffix.size() : 0;
    const std::string name = fs::path(target).filename().string().substr(0, room);
    path_ = (fs::path(dir) / ("." + name + suffix)).string();
    fd_ = ::mkostemp(path_.data(), O_CLOEXEC);
    if (fd_ < 0) fail_kept(shown_path, fmt::format("cannot create a temporary file in {}", dir), errno);
    lock_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (lock_fd_ >= 0) try_lock_exclusive(lock_fd_);  // without it the owner's pid alone protects the file
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor; returns 0 or errno.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }
  void renamed() { renamed_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  int lock_fd_ = -1;
  bool renamed_ = false;
};

// Writes every byte (short writes and EINTR retried); returns 0 or errno.
int write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += std::size_t(n);
  }
  return 0;
}

}  // namespace

void write_output_file(const std::string& path, std::string_view bytes) {
  mode_t mode = kNewFileMode;
  const std::string target = target_of(path, mode);
  TempFile tmp(target, path);
  if (::fchmod(tmp.fd(), mode) != 0) fail_kept(path, "cannot set permissions", errno);
  if (const int err = write_all(tmp.fd(), bytes); err != 0) fail_kept(path, "cannot write", err);
  if (::fsync(tmp.fd()) != 0) fail_kept(path, "cannot write (fsync)", errno);
  if (const int err = tmp.close(); err != 0) fail_kept(path, "cannot write (close)", err);
  if (::rename(tmp.path().c_str(), target.c_str()) != 0) fail_kept(path, "cannot replace", errno);
  tmp.renamed();
  fsync_directory(directory_of(target));
}

void check_output_writable(const std::string& path) {
  mode_t mode = kNewFileMode;
  const std::string target = target_of(path, mode);
  TempFile probe(target, path);
}

void write_file_durable(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kNewFileMode);
  if (fd < 0) fail(path, "cannot create", errno);
  int err = write_all(fd, bytes);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail(path, "cannot write", err);
}

void fsync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open directory", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail(path, "fsync of directory failed", err);
}

}  // namespace fsdpx
