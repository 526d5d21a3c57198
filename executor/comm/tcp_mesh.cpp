// executor/comm/tcp_mesh.cpp — pairwise connections and framed messages of the TCP communicator (see
// tcp_mesh.h). Rank r connects to every lower rank and accepts every higher one, so each pair has
// exactly one socket; waits poll in slices of 100 ms so a local abort() from another thread is seen.
#include "executor/comm/tcp_mesh.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "executor/launch/rendezvous.h"

namespace fsdpx::tcp {
namespace {

constexpr std::uint32_t kMagic = 0x46535443;  // "FSTC"
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t(1) << 40;
constexpr int kSliceMs = 100;
static_assert(sizeof(Header) == 40, "Header must have no padding");

struct Hello {
  std::uint32_t magic = kMagic;
  std::int32_t rank = -1;
};

[[noreturn]] void connect_error(int rank, const std::string& what) {
  throw CommAborted(fmt::format("collective aborted: rank {}: {}", rank, what));
}

net::Fd connect_to(int me, int peer, const std::string& addr, net::Deadline deadline) {
  const auto colon = addr.rfind(':');
  const std::string host = addr.substr(0, colon);
  const int port = std::stoi(addr.substr(colon + 1));
  std::string err = "no attempt";
  for (;;) {
    if (net::Fd fd = net::try_connect_tcp(host, port, deadline, &err)) return fd;
    if (net::ms_until(deadline) == 0)
      connect_error(me, fmt::format("cannot connect to rank {} at {}: {}", peer, addr, err));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

const char* kind_name(std::uint32_t kind) {
  if (kind == kHeartbeat) return "heartbeat";
  return kind == kAbort ? "abort" : collective_op_name(kind);
}

Mesh::Mesh(int rank, int size, double timeout_s) : rank_(rank), timeout_s_(timeout_s) {
  for (int r = 0; r < size; ++r) peers_.push_back(std::make_unique<Peer>());
}

Mesh::~Mesh() { heartbeat_.stop(); }

std::shared_ptr<Mesh> Mesh::connect(Rendezvous& rdzv, double connect_timeout_s, double timeout_s) {
  auto m = connect_peers(rdzv, connect_timeout_s, timeout_s);
  const auto now = std::chrono::steady_clock::now();
  for (auto& p : m->peers_) p->last_heard = now;
  if (m->size() > 1) m->heartbeat_.start(heartbeat_interval_s(timeout_s), [mesh = m.get()] { mesh->beat(); });
  return m;
}

std::shared_ptr<Mesh> Mesh::connect_peers(Rendezvous& rdzv, double connect_timeout_s, double timeout_s) {
  auto m = std::make_shared<Mesh>(rdzv.rank(), rdzv.world_size(), timeout_s);
  const int me = m->rank_, n = m->size();
  if (n == 1) return m;
  net::Fd listener = net::listen_tcp(0);
  const std::string mine = fmt::format("{}:{}", rdzv.local_host(), net::local_port(listener.get()));
  const auto all = rdzv.exchange(std::vector<std::uint8_t>(mine.begin(), mine.end()));
  const net::Deadline deadline = net::deadline_after(connect_timeout_s);
  const Hello hello{kMagic, me};
  for (int j = 0; j < me; ++j) {
    Peer& p = *m->peers_[std::size_t(j)];
    p.fd = connect_to(me, j, std::string(all[std::size_t(j)].begin(), all[std::size_t(j)].end()), deadline);
    if (net::send_all(p.fd.get(), reinterpret_cast<const std::uint8_t*>(&hello), sizeof hello, deadline) !=
        net::IoStatus::ok)
      connect_error(me, fmt::format("rank {} closed the connection before the hello", j));
  }
  std::vector<std::pair<net::Fd, std::vector<std::uint8_t>>> pending;
  for (int missing = n - 1 - me; missing > 0;) {
    std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
    for (auto& [fd, bytes] : pending) fds.push_back({fd.get(), POLLIN, 0});
    if (net::poll_until(fds, deadline) == 0) {
      std::vector<int> absent;
      for (int j = me + 1; j < n; ++j)
        if (!m->peers_[std::size_t(j)]->fd) absent.push_back(j);
      connect_error(me, fmt::format("{} did not connect within {} s", format_ranks(absent), connect_timeout_s));
    }
    std::string where;
    while (net::Fd fd = net::accept_tcp(listener.get(), &where)) pending.emplace_back(std::move(fd), std::vector<std::uint8_t>{});
    for (std::size_t i = 0; i < pending.size();) {
      auto& [fd, bytes] = pending[i];
      const bool closed = net::receive_available(fd.get(), bytes) == net::IoStatus::closed;
      Hello h{0, -1};
      if (bytes.size() >= sizeof h) std::memcpy(&h, bytes.data(), sizeof h);
      const bool ok = h.magic == kMagic && h.rank > me && h.rank < n && !m->peers_[std::size_t(h.rank)]->fd;
      if (ok) {  // what the rank sent after its hello is its first message
        Peer& p = *m->peers_[std::size_t(h.rank)];
        p.fd = std::move(fd);
        p.bytes.assign(bytes.begin() + sizeof h, bytes.end());
        p.closed = closed;
        --missing;
      }
      if (ok || closed || bytes.size() >= sizeof h)  // admitted, or not one of ours: drop it
        pending.erase(pending.begin() + std::ptrdiff_t(i));
      else
        ++i;
    }
  }
  return m;
}

void Mesh::send(int peer, Header h, const void* payload, const char* what) {
  check_aborted();
  h.magic = kMagic;
  const net::IoStatus st = write_frame(*peers_[std::size_t(peer)], h, payload, net::deadline_after(timeout_s_));
  if (st == net::IoStatus::closed)
    fail(fmt::format("rank {} closed its connection (exited or failed) during {}", peer, what));
  if (st == net::IoStatus::timeout)
    fail(fmt::format("rank {}: timed out after {} s sending {} to rank {}", rank_, timeout_s_, what, peer));
}

// The send mutex is held only while writing (abort() may send from another thread), and `mid_frame`
// keeps an abort frame from landing inside this one while the socket is full and peers are read.
net::IoStatus Mesh::write_frame(Peer& p, const Header& h, const void* payload, net::Deadline deadline) {
  const std::uint8_t* parts[2] = {reinterpret_cast<const std::uint8_t*>(&h), static_cast<const std::uint8_t*>(payload)};
  const std::size_t sizes[2] = {sizeof h, std::size_t(h.payload_bytes)};
  for (int k = 0; k < 2; ++k)
    for (std::size_t done = 0; done < sizes[k];) {
      std::size_t sent = 0;
      net::IoStatus st;
      {
        std::lock_guard<std::mutex> lock(p.send_mu);
        st = net::send_some(p.fd.get(), parts[k] + done, sizes[k] - done, &sent);
        done += sent;
        p.mid_frame = st == net::IoStatus::ok && (k == 0 || done < sizes[k]);
      }
      if (st != net::IoStatus::ok) return st;
      if (sent > 0) continue;
      if (net::ms_until(deadline) == 0) return net::IoStatus::timeout;
      poll_peers(std::min(deadline, net::deadline_after(kSliceMs / 1000.0)), p.fd.get());
      pump();  // the socket is full: take in what peers sent meanwhile, so that they can go on writing
    }
  return net::IoStatus::ok;
}

void Mesh::cut_messages(int peer) {
  Peer& p = *peers_[std::size_t(peer)];
  std::size_t at = 0;
  while (p.bytes.size() - at >= sizeof(Header)) {
    Message m;
    std::memcpy(&m.h, p.bytes.data() + at, sizeof(Header));
    if (m.h.magic != kMagic || m.h.payload_bytes > kMaxPayloadBytes)
      fail(fmt::format("rank {} sent a corrupt message to rank {}", peer, rank_));
    if (p.bytes.size() - at - sizeof(Header) < m.h.payload_bytes) break;
    const auto* body = p.bytes.data() + at + sizeof(Header);
    m.payload.assign(body, body + m.h.payload_bytes);
    at += sizeof(Header) + std::size_t(m.h.payload_bytes);
    if (m.h.kind == kHeartbeat) continue;  // its bytes already counted as news from the peer (pump)
    if (m.h.kind == kAbort) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!aborted_) aborted_ = true, abort_msg_.assign(m.payload.begin(), m.payload.end());
    } else {
      p.inbox.push_back(std::move(m));
    }
  }
  p.bytes.erase(p.bytes.begin(), p.bytes.begin() + std::ptrdiff_t(at));
}

void Mesh::pump() {
  for (int j = 0; j < size(); ++j) {
    Peer& p = *peers_[std::size_t(j)];
    if (j == rank_ || p.closed || !p.fd) continue;
    const std::size_t before = p.bytes.size();
    if (net::receive_available(p.fd.get(), p.bytes) == net::IoStatus::closed) p.closed = true;
    if (p.bytes.size() != before) p.last_heard = std::chrono::steady_clock::now();
    cut_messages(j);
  }
}

Message Mesh::wait_for(int peer, const std::function<int(const std::deque<Message>&)>& pick, double wait_s,
                       const char* what) {
  const net::Deadline deadline = net::deadline_after(wait_s);
  Peer& p = *peers_[std::size_t(peer)];
  for (;;) {
    check_aborted();
    pump();
    forward_abort();
    const int at = pick(p.inbox);
    if (at >= 0) {
      Message m = std::move(p.inbox[std::size_t(at)]);
      p.inbox.erase(p.inbox.begin() + at);
      return m;
    }
    if (p.closed) fail(fmt::format("rank {} closed its connection (exited or failed) during {}", peer, what));
    check_silent_peers();
    if (net::ms_until(deadline) == 0)
      fail(fmt::format("rank {}: timed out after {:g} s waiting for rank {} in {}", rank_, wait_s, peer, what));
    poll_peers(std::min(deadline, net::deadline_after(kSliceMs / 1000.0)), -1);
  }
}

void Mesh::poll_peers(net::Deadline deadline, int out_fd) {
  std::vector<pollfd> fds;
  for (int j = 0; j < size(); ++j)
    if (j != rank_ && !peers_[std::size_t(j)]->closed && peers_[std::size_t(j)]->fd)
      fds.push_back({peers_[std::size_t(j)]->fd.get(), POLLIN, 0});
  if (out_fd >= 0) fds.push_back({out_fd, POLLOUT, 0});
  net::poll_until(fds, deadline);
}

Message Mesh::receive(int peer, std::uint64_t group, double wait_s, const char* what) {
  Message m = wait_for(
      peer,
      [](const std::deque<Message>& inbox) {
        for (std::size_t i = 0; i < inbox.size(); ++i)
          if (inbox[i].h.kind != kSendRecv) return int(i);
        return -1;
      },
      wait_s, what);
  if (m.h.group != group)
    fail(fmt::format("rank {}: mismatched collectives: rank {} sent {} of another group while rank {} waited in {}",
                     rank_, peer, kind_name(m.h.kind), rank_, what));
  return m;
}

Message Mesh::receive_p2p(int peer, std::uint64_t group, int tag, double wait_s, const char* what) {
  return wait_for(
      peer,
      [&](const std::deque<Message>& inbox) {
        for (std::size_t i = 0; i < inbox.size(); ++i)
          if (inbox[i].h.kind == kSendRecv && inbox[i].h.group == group && inbox[i].h.root == tag) return int(i);
        return -1;
      },
      wait_s, what);
}

void Mesh::beat() {
  Header h;
  h.magic = kMagic;
  h.kind = kHeartbeat;
  for (int j = 0; j < size(); ++j) {
    Peer& p = *peers_[std::size_t(j)];
    if (j == rank_ || !p.fd) continue;
    std::unique_lock<std::mutex> lock(p.send_mu, std::try_to_lock);  // a frame on its way says as much
    if (!lock || p.mid_frame) continue;
    // A peer that does not take 40 bytes within the timeout has stopped reading; the frame may now be cut,
    // so the mesh is failed by the next wait (check_silent_peers) before anything else is sent.
    const auto st = net::send_all(p.fd.get(), reinterpret_cast<const std::uint8_t*>(&h), sizeof h,
                                  net::deadline_after(timeout_s_));
    if (st == net::IoStatus::timeout) {
      int none = -1;
      stalled_peer_.compare_exchange_strong(none, j);
      p.mid_frame = true;  // nothing more goes to it
    }
  }
}

void Mesh::check_silent_peers() {
  if (const int j = stalled_peer_.load(); j >= 0)
    fail(fmt::format("rank {}: rank {} read nothing for {:g} s (stopped or hung; --comm-timeout {:g} s)", rank_, j,
                     timeout_s_, timeout_s_));
  const auto now = std::chrono::steady_clock::now();
  const double limit_s = silence_limit_s(timeout_s_, kSliceMs / 1000.0);
  for (int j = 0; j < size(); ++j) {
    const Peer& p = *peers_[std::size_t(j)];
    if (j == rank_ || p.closed || !p.fd) continue;
    const double silent_s = std::chrono::duration<double>(now - p.last_heard).count();
    if (silent_s > limit_s)
      fail(fmt::format("rank {}: rank {} sent nothing, not even a heartbeat, for {:.1f} s: it is stopped, hung or "
                       "unreachable (--comm-timeout {:g} s)", rank_, j, silent_s, timeout_s_));
  }
}

void Mesh::abort(const std::string& msg_in) {
  std::string msg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_) aborted_ = true, abort_msg_ = msg_in;
    if (abort_sent_) return;
    abort_sent_ = true;
    msg = abort_msg_;
  }
  Header h;
  h.magic = kMagic;
  h.kind = kAbort;
  h.payload_bytes = msg.size();
  const net::Deadline d = net::deadline_after(1.0);
  for (int j = 0; j < size(); ++j) {
    Peer& p = *peers_[std::size_t(j)];
    if (j == rank_ || !p.fd) continue;
    // Wait (within the deadline) for a heartbeat or a collective's write in progress: an abort skipped here
    // would let the peer read this rank's closed socket first and name the wrong cause. Only a peer with a
    // frame half written is skipped, since an abort frame inside it would corrupt the stream. try_lock in a
    // loop rather than a timed mutex: g++ 12's ThreadSanitizer does not see timed_mutex's clock lock.
    std::unique_lock<std::mutex> lock(p.send_mu, std::defer_lock);
    while (!lock.try_lock() && net::ms_until(d) > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!lock.owns_lock() || p.mid_frame) continue;
    if (net::send_all(p.fd.get(), reinterpret_cast<const std::uint8_t*>(&h), sizeof h, d) == net::IoStatus::ok)
      net::send_all(p.fd.get(), reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size(), d);
  }
}

void Mesh::forward_abort() {
  std::string msg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_) return;
    msg = abort_msg_;
  }
  abort(msg);  // passes a received abort on before this rank can exit: a peer waiting on it hears why
  check_aborted();
}

void Mesh::check_aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) throw CommAborted("collective aborted: " + abort_msg_);
}

void Mesh::fail(const std::string& msg) {
  abort(msg);
  check_aborted();
  throw CommAborted("collective aborted: " + msg);
}

}  // namespace fsdpx::tcp
