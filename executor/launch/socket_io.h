// executor/launch/socket_io.h — the POSIX TCP pieces of the rendezvous: an owning descriptor, and
// non-blocking connect/accept/send/receive that retry on EINTR and partial transfers and wait with
// poll() only until a deadline, so no call can block forever. IPv4 only (hostnames resolve through
// getaddrinfo); no IPv6, TLS or authentication: the rendezvous runs inside one job's network.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fsdpx::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

Deadline deadline_after(double seconds);
// Milliseconds left until `d`, rounded up, 0 once it has passed (a poll() timeout).
int ms_until(Deadline d);

// Owns one file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

enum class IoStatus { ok, timeout, closed };

// A non-blocking socket listening on 0.0.0.0:port with SO_REUSEADDR. Throws std::system_error
// (e.g. "Address already in use").
Fd listen_tcp(int port);

// A free TCP port on this host, found by binding port 0 (another process may take it before the
// caller binds it; SO_REUSEADDR keeps the window small).
int pick_free_port();

// The port a socket is bound to (listen_tcp(0) picks one) and the IPv4 address of its local end
// (for a connected socket: this host's address on the route to the peer). Throw std::system_error.
int local_port(int fd);
std::string local_ip(int fd);

// One connection attempt to host:port, waiting at most until `deadline`. An empty Fd when the
// attempt failed in a way worth retrying (refused, unreachable, unresolvable right now); `error`
// then says why. The socket returned is non-blocking with TCP_NODELAY.
Fd try_connect_tcp(const std::string& host, int port, Deadline deadline, std::string* error);

// Accepts one pending connection (non-blocking): an empty Fd when none is pending. `peer` gets
// "ip:port" of the other side.
Fd accept_tcp(int listen_fd, std::string* peer);

// Writes all `n` bytes; `closed` when the peer has gone (EPIPE, ECONNRESET), `timeout` at the deadline.
IoStatus send_all(int fd, const std::uint8_t* data, std::size_t n, Deadline deadline);

// Writes what the socket takes now of `n` bytes, never waiting; `sent` gets the count (0 when full).
IoStatus send_some(int fd, const std::uint8_t* data, std::size_t n, std::size_t* sent);

// Appends the bytes available now (up to 256 KiB) to `buffer`, never waiting; `closed` at end of
// stream or on a reset.
IoStatus receive_available(int fd, std::vector<std::uint8_t>& buffer);

// poll() on `fds` until one is ready or the deadline passes, retrying on EINTR; returns the number
// of ready descriptors (0: timeout).
int poll_until(std::vector<pollfd>& fds, Deadline deadline);

}  // namespace fsdpx::net
