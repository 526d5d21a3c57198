// executor/launch/rendezvous.cpp — the rendezvous protocol (see rendezvous.h). Rank 0 is a star's
// hub: it accepts, checks each hello, and answers every call with one message to all ranks; any
// failure it sees goes out to every connected rank as an error frame before rank 0 throws, so all
// ranks report the same cause. The other ranks only ever wait for rank 0, with a deadline.
#include "executor/launch/rendezvous.h"

#include <algorithm>
#include <optional>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/launch/launch_env.h"
#include "executor/launch/rendezvous_channel.h"

namespace fsdpx {

using wire::Bytes;
using wire::MsgType;

namespace rdzv {

struct State {
  RendezvousOptions o;
  std::string where;                   // "rendezvous at host:port"
  std::vector<rdzv::Channel> peers;    // rank 0: indexed by rank ([0] unused); others: {rank 0}
  bool broken = false;
};

}  // namespace rdzv

namespace {

using rdzv::State;
using rdzv::Channel;
using rdzv::ReadResult;

// Clients wait this much longer than rank 0 so that rank 0's explanation reaches them first.
constexpr double kClientGrace_s = 1.0;

std::string seconds(double s) { return fmt::format("{:g} s", s); }

// ---- rank 0 ----

// Tells every connected rank (and the not yet identified connections) why, then throws.
[[noreturn]] void fail(State& s, const std::string& what, std::vector<Channel>* pending = nullptr) {
  const std::string msg = s.where + ": " + what;
  const Bytes frame = wire::encode_frame(MsgType::error, msg);
  const net::Deadline d = net::deadline_after(1.0);
  auto tell = [&](Channel& c) {
    if (c.fd) net::send_all(c.fd.get(), frame.data(), frame.size(), d);  // best effort
  };
  std::for_each(s.peers.begin(), s.peers.end(), tell);
  if (pending != nullptr) std::for_each(pending->begin(), pending->end(), tell);
  s.peers.clear();
  s.broken = true;
  throw RendezvousError(msg);
}

void send_to_all(State& s, MsgType type, const Bytes& body, const char* what) {
  const Bytes frame = wire::encode_frame(type, body);
  const net::Deadline d = net::deadline_after(s.o.timeout_s);
  for (int r = 1; r < s.o.world_size; ++r) {
    const net::IoStatus st = net::send_all(s.peers[r].fd.get(), frame.data(), frame.size(), d);
    if (st == net::IoStatus::closed)
      fail(s, fmt::format("rank {} closed its connection during the {}", r, what));
    if (st == net::IoStatus::timeout)
      fail(s, fmt::format("rank {} did not read rank 0's {} within {}", r, what, seconds(s.o.timeout_s)));
  }
}

void check_hello(State& s, const wire::Hello& h, const Channel& c, std::vector<Channel>& pending) {
  const int n = s.o.world_size;
  if (h.world_size != n)
    fail(s, fmt::format("rank {} (at {}) has world size {}, rank 0 has {}", h.rank, c.peer,
                        h.world_size, n), &pending);
  if (h.rank == 0) fail(s, fmt::format("a second process claims rank 0 (at {})", c.peer), &pending);
  if (h.rank < 0 || h.rank >= n)
    fail(s, fmt::format("a process at {} claims rank {}, but ranks are 0..{}", c.peer, h.rank, n - 1),
         &pending);
  if (h.fingerprint != s.o.fingerprint)
    fail(s, fmt::format("rank {} (at {}) has job fingerprint '{}', rank 0 has '{}': the ranks were "
                        "started with different plans or fsdpx versions",
                        h.rank, c.peer, h.fingerprint.substr(0, 80), s.o.fingerprint.substr(0, 80)),
         &pending);
  if (s.peers[std::size_t(h.rank)].fd)
    fail(s, fmt::format("rank {} joined twice (from {} and {})", h.rank,
                        s.peers[std::size_t(h.rank)].peer, c.peer), &pending);
}

// Reads what the unidentified connections sent; a valid hello moves one into s.peers. Connections
// that are not fsdpx ranks (wrong magic, closed before a hello: a port probe) are dropped quietly.
int admit_hellos(State& s, std::vector<Channel>& pending) {
  int admitted = 0;
  for (std::size_t i = 0; i < pending.size();) {
    Channel& c = pending[i];
    wire::Frame f;
    const ReadResult r = rdzv::read_available(c, &f);
    std::optional<wire::Hello> hello;
    if (r == ReadResult::frame && f.version != wire::kProtocolVersion)
      fail(s, fmt::format("a process at {} speaks rendezvous protocol {}, rank 0 speaks {} (mixed "
                          "fsdpx versions)", c.peer, f.version, wire::kProtocolVersion), &pending);
    if (r == ReadResult::frame && f.type == MsgType::hello) hello = wire::decode_hello(f.body);
    if (hello) {
      check_hello(s, *hello, c, pending);
      c.rank = hello->rank;
      s.peers[std::size_t(hello->rank)] = std::move(c);
      ++admitted;
    }
    if (hello || r != ReadResult::need_more)  // admitted, or not an fsdpx rank
      pending.erase(pending.begin() + std::ptrdiff_t(i));
    else
      ++i;
  }
  return admitted;
}

std::vector<int> ranks_without_fd(const State& s) {
  std::vector<int> missing;
  for (int r = 1; r < s.o.world_size; ++r)
    if (!s.peers[std::size_t(r)].fd) missing.push_back(r);
  return missing;
}

void server_join(State& s) {
  net::Fd listener;
  try {
    listener = net::listen_tcp(s.o.master_port);
  } catch (const std::system_error& e) {
    fail(s, fmt::format("rank 0 cannot listen on port {}: {}", s.o.master_port, e.code().message()));
  }
  s.peers.resize(std::size_t(s.o.world_size));
  std::vector<Channel> pending;
  const net::Deadline deadline = net::deadline_after(s.o.timeout_s);
  for (int joined = 0; joined < s.o.world_size - 1;) {
    std::vector<pollfd> fds{{listener.get(), POLLIN, 0}};
    for (const Channel& c : pending) fds.push_back({c.fd.get(), POLLIN, 0});
    for (const Channel& c : s.peers)
      if (c.fd) fds.push_back({c.fd.get(), POLLIN, 0});  // notices a joined rank that goes away
    if (net::poll_until(fds, deadline) == 0)
      fail(s, fmt::format("{} did not connect within {}", format_ranks(ranks_without_fd(s)),
                          seconds(s.o.timeout_s)), &pending);
    for (;;) {
      Channel c;
      c.fd = net::accept_tcp(listener.get(), &c.peer);
      if (!c.fd) break;
      pending.push_back(std::move(c));
    }
    joined += admit_hellos(s, pending);
    for (Channel& c : s.peers)
      if (c.fd && rdzv::peer_closed(c))
        fail(s, fmt::format("rank {} closed its connection before all ranks joined", c.rank), &pending);
  }
  listener.reset();
  send_to_all(s, MsgType::welcome, {}, "welcome");
}

// One message of `type` from every rank, indexed by rank ([0] empty).
std::vector<Bytes> collect(State& s, MsgType type, const char* what) {
  const int n = s.o.world_size;
  std::vector<Bytes> got(static_cast<std::size_t>(n));
  std::vector<int> missing;
  for (int r = 1; r < n; ++r) missing.push_back(r);
  const net::Deadline deadline = net::deadline_after(s.o.timeout_s);
  while (!missing.empty()) {
    for (auto it = missing.begin(); it != missing.end();) {
      wire::Frame f;
      const int r = *it;
      const ReadResult res = rdzv::read_available(s.peers[std::size_t(r)], &f);
      if (res == ReadResult::closed)
        fail(s, fmt::format("rank {} closed its connection during the {}", r, what));
      if (res == ReadResult::garbage)
        fail(s, fmt::format("rank {} sent a corrupt message during the {}", r, what));
      if (res == ReadResult::frame && f.type != type)
        fail(s, fmt::format("rank {} sent '{}' during the {}: the ranks called the rendezvous in "
                            "different orders", r, wire::to_string(f.type), what));
      if (res == ReadResult::frame) {
        got[std::size_t(r)] = std::move(f.body);
        it = missing.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<pollfd> fds;
    for (int r : missing) fds.push_back({s.peers[std::size_t(r)].fd.get(), POLLIN, 0});
    if (!missing.empty() && net::poll_until(fds, deadline) == 0)
      fail(s, fmt::format("{} did not reply within {} during the {}", format_ranks(missing),
                          seconds(s.o.timeout_s), what));
  }
  return got;
}

// ---- ranks 1..n-1 ----

[[noreturn]] void client_fail(State& s, const std::string& msg) {
  s.peers.clear();  // closing tells rank 0 at once
  s.broken = true;
  throw RendezvousError(msg);
}

void client_send(State& s, MsgType type, const Bytes& body, const char* what) {
  const Bytes frame = wire::encode_frame(type, body);
  const net::IoStatus st = net::send_all(s.peers[0].fd.get(), frame.data(), frame.size(),
                                         net::deadline_after(s.o.timeout_s + kClientGrace_s));
  if (st != net::IoStatus::ok)
    client_fail(s, fmt::format("{}: rank {} could not send its {} to rank 0 ({})", s.where, s.o.rank,
                               what, st == net::IoStatus::closed ? "connection closed" : "timed out"));
}

Bytes client_expect(State& s, MsgType type, const char* what) {
  const double wait_s = s.o.timeout_s + kClientGrace_s;
  wire::Frame f;
  switch (rdzv::read_frame(s.peers[0], net::deadline_after(wait_s), &f)) {
    case ReadResult::frame:
      if (f.type == MsgType::error) client_fail(s, std::string(f.body.begin(), f.body.end()));
      if (f.type != type)
        client_fail(s, fmt::format("{}: rank {} got '{}' from rank 0 during the {}, expected '{}'",
                                   s.where, s.o.rank, wire::to_string(f.type), what,
                                   wire::to_string(type)));
      return std::move(f.body);
    case ReadResult::closed:
      client_fail(s, fmt::format("{}: rank 0 closed the connection during the {} (rank 0 failed or "
                                 "exited; see its output)", s.where, what));
    case ReadResult::timeout:
      client_fail(s, fmt::format("{}: rank {} had no answer from rank 0 within {} during the {}",
                                 s.where, s.o.rank, seconds(wait_s), what));
    case ReadResult::garbage:
    case ReadResult::need_more:  // read_frame waits instead
      break;
  }
  client_fail(s, fmt::format("{}: rank {} got a corrupt message from rank 0 during the {}", s.where,
                             s.o.rank, what));
}

void client_join(State& s) {
  const net::Deadline deadline = net::deadline_after(s.o.timeout_s);
  Channel c;
  std::string last_error = "no attempt";
  for (double backoff_s = 0.02; !(c.fd = net::try_connect_tcp(s.o.master_addr, s.o.master_port,
                                                             deadline, &last_error));) {
    if (net::ms_until(deadline) == 0)
      client_fail(s, fmt::format("{}: rank {} could not connect to rank 0 within {} ({})", s.where,
                                 s.o.rank, seconds(s.o.timeout_s), last_error));
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min(net::ms_until(deadline), int(backoff_s * 1000))));
    backoff_s = std::min(2 * backoff_s, 1.0);
  }
  c.rank = 0;
  s.peers.push_back(std::move(c));
  client_send(s, MsgType::hello, wire::encode_hello({s.o.rank, s.o.world_size, s.o.fingerprint}),
              "hello");
  client_expect(s, MsgType::welcome, "join");
}

// Every rank arrives, then every rank is released: nobody leaves before all have what they need.
void all_arrive(State& s, const char* what) {
  if (s.o.world_size == 1) return;
  if (s.o.rank == 0) {
    collect(s, MsgType::ack, what);
    send_to_all(s, MsgType::release, {}, what);
  } else {
    client_send(s, MsgType::ack, {}, what);
    client_expect(s, MsgType::release, what);
  }
}

void check_usable(const State& s) {
  if (s.broken) throw RendezvousError(s.where + ": an earlier rendezvous call failed");
}

}  // namespace

Rendezvous Rendezvous::join(const RendezvousOptions& options) {
  FSDP_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
             "rendezvous: rank out of range");
  auto s = std::make_unique<State>();
  s->o = options;
  s->where = fmt::format("rendezvous at {}:{}", options.master_addr, options.master_port);
  if (options.world_size > 1) (options.rank == 0 ? server_join : client_join)(*s);
  return Rendezvous(std::move(s));
}

Rendezvous::Rendezvous(std::unique_ptr<rdzv::State> state) : state_(std::move(state)) {}
Rendezvous::Rendezvous(Rendezvous&&) noexcept = default;
Rendezvous& Rendezvous::operator=(Rendezvous&&) noexcept = default;
Rendezvous::~Rendezvous() = default;

int Rendezvous::rank() const { return state_->o.rank; }
int Rendezvous::world_size() const { return state_->o.world_size; }

std::string Rendezvous::local_host() const {
  const State& s = *state_;
  if (s.o.rank == 0 || s.peers.empty() || !s.peers[0].fd) return s.o.master_addr;
  return net::local_ip(s.peers[0].fd.get());
}

void Rendezvous::barrier() {
  check_usable(*state_);
  all_arrive(*state_, "barrier");
}

std::vector<std::uint8_t> Rendezvous::broadcast(const std::vector<std::uint8_t>& payload) {
  State& s = *state_;
  check_usable(s);
  if (s.o.world_size == 1) return payload;
  Bytes result = payload;
  if (s.o.rank == 0)
    send_to_all(s, MsgType::data, payload, "broadcast");
  else
    result = client_expect(s, MsgType::data, "broadcast");
  all_arrive(s, "broadcast");
  return result;
}

std::vector<std::vector<std::uint8_t>> Rendezvous::exchange(const std::vector<std::uint8_t>& mine) {
  State& s = *state_;
  check_usable(s);
  if (s.o.world_size == 1) return {mine};
  if (s.o.rank == 0) {
    std::vector<Bytes> all = collect(s, MsgType::gather, "exchange");
    all[0] = mine;
    send_to_all(s, MsgType::gathered, wire::encode_blobs(all), "exchange");
    return all;
  }
  client_send(s, MsgType::gather, mine, "exchange");
  std::optional<std::vector<Bytes>> all = wire::decode_blobs(client_expect(s, MsgType::gathered, "exchange"));
  if (!all || int(all->size()) != s.o.world_size)
    client_fail(s, fmt::format("{}: rank {} got a corrupt exchange result from rank 0", s.where, s.o.rank));
  return std::move(*all);
}

std::vector<std::uint8_t> rendezvous_broadcast(const RendezvousOptions& options,
                                               const std::vector<std::uint8_t>& payload_on_rank0) {
  return Rendezvous::join(options).broadcast(payload_on_rank0);
}

std::string format_ranks(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  std::string out = r.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (i > 0) out += ", ";
    if (j >= i + 2) {
      out += fmt::format("{}-{}", r[i], r[j]);
      i = j + 1;
    } else {
      out += std::to_string(r[i]);
      ++i;
    }
  }
  return out;
}

RendezvousOptions rendezvous_options(const LaunchEnv& env, const std::string& fingerprint) {
  RendezvousOptions r;
  r.master_addr = env.master_addr;
  r.master_port = env.master_port;
  r.rank = env.rank;
  r.world_size = env.world_size;
  r.fingerprint = fingerprint;
  return r;
}

}  // namespace fsdpx
