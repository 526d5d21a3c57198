// executor/launch/socket_io.cpp — POSIX sockets with deadlines (see socket_io.h). Every socket is
// non-blocking; waiting happens only in poll() with the time left, and EINTR restarts the wait.
#include "executor/launch/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <system_error>

namespace fsdpx::net {
namespace {

std::system_error sys_error(const char* what) {
  return std::system_error(errno, std::generic_category(), what);
}

Fd new_socket() {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s) throw sys_error("socket");
  return s;
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // best effort: only latency
}

// Waits for a non-blocking connect to finish; 0 or the connect errno (ETIMEDOUT at the deadline).
int finish_connect(int fd, Deadline deadline) {
  std::vector<pollfd> p{{fd, POLLOUT, 0}};
  if (poll_until(p, deadline) == 0) return ETIMEDOUT;
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace

Deadline deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, seconds)));
}

int ms_until(Deadline d) {
  const auto left = d - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const double ms = std::ceil(std::chrono::duration<double, std::milli>(left).count());
  return ms > 1e9 ? 1000000000 : int(ms);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);  // no retry on EINTR: Linux releases the descriptor anyway
  fd_ = -1;
}

Fd listen_tcp(int port) {
  Fd s = new_socket();
  const int one = 1;
  if (::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
    throw sys_error("setsockopt(SO_REUSEADDR)");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(std::uint16_t(port));
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw sys_error("bind");
  if (::listen(s.get(), SOMAXCONN) != 0) throw sys_error("listen");
  return s;
}

int pick_free_port() { return local_port(listen_tcp(0).get()); }

namespace {
sockaddr_in local_addr(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw sys_error("getsockname");
  return addr;
}
}  // namespace

int local_port(int fd) { return ntohs(local_addr(fd).sin_port); }

std::string local_ip(int fd) {
  const sockaddr_in addr = local_addr(fd);
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  return ip;
}

Fd try_connect_tcp(const std::string& host, int port, Deadline deadline, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *error = std::string("cannot resolve '") + host + "': " + ::gai_strerror(rc);
    return Fd{};
  }
  Fd result;
  for (const addrinfo* a = found; a != nullptr && !result; a = a->ai_next) {
    Fd s = new_socket();
    int err = 0;
    if (::connect(s.get(), a->ai_addr, a->ai_addrlen) != 0)
      err = errno == EINPROGRESS || errno == EINTR ? finish_connect(s.get(), deadline) : errno;
    if (err == 0) {
      set_nodelay(s.get());
      result = std::move(s);
    } else {
      *error = std::strerror(err);
    }
  }
  ::freeaddrinfo(found);
  return result;
}

Fd accept_tcp(int listen_fd, std::string* peer) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  for (;;) {
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      set_nodelay(fd);
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
      *peer = std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
      return Fd(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Fd{};
    throw sys_error("accept");
  }
}

IoStatus send_all(int fd, const std::uint8_t* data, std::size_t n, Deadline deadline) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t k = ::send(fd, data + done, n - done, MSG_NOSIGNAL);
    if (k > 0) {
      done += std::size_t(k);
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::vector<pollfd> p{{fd, POLLOUT, 0}};
      if (poll_until(p, deadline) == 0) return IoStatus::timeout;
    } else {
      return IoStatus::closed;  // EPIPE, ECONNRESET, ...: the peer is gone
    }
  }
  return IoStatus::ok;
}

IoStatus send_some(int fd, const std::uint8_t* data, std::size_t n, std::size_t* sent) {
  *sent = 0;
  while (*sent < n) {
    const ssize_t k = ::send(fd, data + *sent, n - *sent, MSG_NOSIGNAL);
    if (k > 0) {
      *sent += std::size_t(k);
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return IoStatus::ok;
    } else {
      return IoStatus::closed;  // EPIPE, ECONNRESET, ...: the peer is gone
    }
  }
  return IoStatus::ok;
}

IoStatus receive_available(int fd, std::vector<std::uint8_t>& buffer) {
  std::uint8_t chunk[4096];
  for (int reads = 0; reads < 64; ++reads) {
    const ssize_t k = ::recv(fd, chunk, sizeof chunk, 0);
    if (k > 0) {
      buffer.insert(buffer.end(), chunk, chunk + k);
    } else if (k == 0) {
      return IoStatus::closed;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return IoStatus::ok;
    } else {
      return IoStatus::closed;
    }
  }
  return IoStatus::ok;  // more may be waiting: the caller's next poll() says so
}

int poll_until(std::vector<pollfd>& fds, Deadline deadline) {
  for (;;) {
    const int n = ::poll(fds.data(), nfds_t(fds.size()), ms_until(deadline));
    if (n >= 0) return n;
    if (errno != EINTR) throw sys_error("poll");
  }
}

}  // namespace fsdpx::net
