// python/stdout_capture.cpp — fd 1 redirected to a memfd (Linux memfd_create(2)) and back with dup2(2);
// stdio and iostream buffers are flushed at both ends so nothing written before or after leaks across.
#include "python/stdout_capture.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

namespace fsdpx::python {

namespace {

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(fmt::format("capturing standard output: {}: {}", what, std::strerror(errno)));
}

void flush_all() {
  std::cout.flush();
  std::fflush(stdout);
}

}  // namespace

StdoutCapture::StdoutCapture() {
  flush_all();
  capture_fd_ = memfd_create("fsdpx-stdout", MFD_CLOEXEC);
  if (capture_fd_ < 0) fail("memfd_create");
  saved_fd_ = dup(STDOUT_FILENO);
  if (saved_fd_ < 0 || dup2(capture_fd_, STDOUT_FILENO) < 0) {
    const int err = errno;
    if (saved_fd_ >= 0) close(saved_fd_);
    close(capture_fd_);
    errno = err;
    fail("dup");
  }
}

StdoutCapture::~StdoutCapture() {
  restore();
  if (capture_fd_ >= 0) close(capture_fd_);
}

void StdoutCapture::restore() {
  if (saved_fd_ < 0) return;
  flush_all();
  dup2(saved_fd_, STDOUT_FILENO);
  close(saved_fd_);
  saved_fd_ = -1;
}

std::string StdoutCapture::take() {
  restore();
  std::string text;
  char buf[65536];
  if (lseek(capture_fd_, 0, SEEK_SET) < 0) fail("lseek");
  for (;;) {
    const ssize_t n = read(capture_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read");
    if (n == 0) break;
    text.append(buf, std::size_t(n));
  }
  return text;
}

}  // namespace fsdpx::python
