// tests/executor/test_rendezvous.cpp — the TCP rendezvous over 127.0.0.1 with ranks as threads: a
// 128-byte id arrives bit-exact on every rank, exchange() gathers blobs of any length; and every
// failure ends every rank quickly with the offending rank named: ranks that never come, a duplicate
// rank, mismatched fingerprints or world sizes, a rank that joins and then disconnects, a stranger
// speaking another protocol. Port probes (connect, close) and garbage connections are ignored.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "executor/launch/rendezvous.h"
#include "executor/launch/rendezvous_channel.h"
#include "executor/launch/rendezvous_wire.h"
#include "executor/launch/socket_io.h"
#include "tests/executor/rendezvous_fixtures.h"

namespace fsdpx {
namespace {

using test::error_of_rank;
using test::options;
using test::run_ranks;
using test::unique_id;
using Bytes = std::vector<std::uint8_t>;

// A raw client: connects to rank 0 (retrying for 2 s) and sends `bytes`; an empty Fd if it could not.
net::Fd raw_client(int port, const Bytes& bytes) {
  std::string error;
  net::Fd fd;
  const net::Deadline d = net::deadline_after(2.0);
  while (!(fd = net::try_connect_tcp("127.0.0.1", port, d, &error)) && net::ms_until(d) > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (fd && net::send_all(fd.get(), bytes.data(), bytes.size(), d) != net::IoStatus::ok) fd.reset();
  return fd;
}

// The error message rank 0 sent on `fd` ("" if none came within 2 s).
std::string error_sent_to(net::Fd& fd) {
  rdzv::Channel c;
  c.fd = std::move(fd);
  wire::Frame f;
  if (rdzv::read_frame(c, net::deadline_after(2.0), &f) != rdzv::ReadResult::frame) return "";
  return f.type == wire::MsgType::error ? std::string(f.body.begin(), f.body.end()) : "";
}

Bytes hello_frame(int rank, int world_size, const std::string& fingerprint) {
  return wire::encode_frame(wire::MsgType::hello, wire::encode_hello({rank, world_size, fingerprint}));
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("rendezvous: 4 ranks get rank 0's 128-byte id bit-exact, exchange blobs, pass barriers") {
  const int port = net::pick_free_port();
  const Bytes id = unique_id();
  std::vector<Bytes> got(4);
  std::vector<std::vector<Bytes>> gathered(4);
  std::vector<Bytes> second(4);
  const auto errors = run_ranks(4, [&](int rank) {
    Rendezvous rv = Rendezvous::join(options(port, rank, 4));
    got[std::size_t(rank)] = rv.broadcast(rank == 0 ? id : Bytes{});
    // Blobs of different lengths, one empty (exchange carries any bytes).
    const Bytes mine(std::size_t(rank == 3 ? 0 : 5 + rank), std::uint8_t(0xA0 + rank));
    gathered[std::size_t(rank)] = rv.exchange(mine);
    rv.barrier();
    second[std::size_t(rank)] = rv.broadcast(rank == 0 ? Bytes{1, 2, 3} : Bytes{9});
  });
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(errors[std::size_t(r)].empty());
    CHECK(got[std::size_t(r)] == id);
    CHECK(second[std::size_t(r)] == Bytes{1, 2, 3});
    REQUIRE(gathered[std::size_t(r)].size() == 4);
    for (int j = 0; j < 4; ++j)
      CHECK(gathered[std::size_t(r)][std::size_t(j)] ==
            Bytes(std::size_t(j == 3 ? 0 : 5 + j), std::uint8_t(0xA0 + j)));
  }
}

TEST_CASE("rendezvous: one rank needs no network") {
  RendezvousOptions o = options(1, 0, 1);  // port 1 could not be bound: proves nothing listens
  CHECK(rendezvous_broadcast(o, unique_id()) == unique_id());
  Rendezvous rv = Rendezvous::join(o);
  CHECK(rv.exchange({7}) == std::vector<Bytes>{{7}});
  rv.barrier();
}

TEST_CASE("rendezvous: ranks that never come are named by every rank that came, within the timeout") {
  const int port = net::pick_free_port();
  const auto start = std::chrono::steady_clock::now();
  const auto errors = run_ranks(2, [&](int rank) { Rendezvous::join(options(port, rank, 4, 0.5)); });
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string expected =
      "rendezvous at 127.0.0.1:" + std::to_string(port) + ": ranks 2, 3 did not connect within 0.5 s";
  CHECK(errors[0] == expected);
  CHECK(errors[1] == expected);  // rank 0's explanation, not just "timed out"
  CHECK(elapsed_s < 2.0);
}

TEST_CASE("rendezvous: without rank 0 a rank gives up at its deadline, naming the address") {
  const int port = net::pick_free_port();
  const std::string error = error_of_rank([&] { Rendezvous::join(options(port, 2, 4, 0.3)); });
  CHECK(contains(error, "rendezvous at 127.0.0.1:" + std::to_string(port) +
                            ": rank 2 could not connect to rank 0 within 0.3 s (Connection refused)"));
  CHECK(contains(error_of_rank([] { Rendezvous::join(options(29500, 1, 2, 0.2, "no-such-host.invalid")); }),
                 "cannot resolve 'no-such-host.invalid'"));
}

TEST_CASE("rendezvous: a duplicate rank fails every rank that reached rank 0") {
  const int port = net::pick_free_port();
  const int ranks[] = {0, 2, 2};
  const auto errors = run_ranks(3, [&](int i) { Rendezvous::join(options(port, ranks[i], 4, 2.0)); });
  for (const std::string& e : errors) {
    CAPTURE(e);
    CHECK(contains(e, "rank 2 joined twice (from 127.0.0.1:"));
  }
}

TEST_CASE("rendezvous: mismatched fingerprints and world sizes name the rank") {
  const int port = net::pick_free_port();
  auto errors = run_ranks(3, [&](int rank) {
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // ranks 0, 1 first
    Rendezvous::join(options(port, rank, 3, 2.0, "127.0.0.1", rank == 2 ? "plan-other" : "plan-abc"));
  });
  CAPTURE(errors[1]);
  CHECK(contains(errors[0], "rank 2 (at 127.0.0.1:"));
  CHECK(contains(errors[0], "has job fingerprint 'plan-other', rank 0 has 'plan-abc': the ranks were "
                            "started with different plans or fsdpx versions"));
  CHECK(errors[2] == errors[0]);  // the offender learns why
  // Rank 1 normally joined first and gets the same message; on a slow machine it may instead have come
  // after rank 0 closed its port.
  CHECK((errors[1] == errors[0] || contains(errors[1], "could not connect to rank 0")));
  const int port2 = net::pick_free_port();
  errors = run_ranks(2, [&](int rank) { Rendezvous::join(options(port2, rank, rank == 1 ? 5 : 2, 2.0)); });
  CHECK(contains(errors[0], "has world size 5, rank 0 has 2"));
  CHECK(errors[0] == errors[1]);
}

TEST_CASE("rendezvous: hand-made hellos: rank out of range, a second rank 0, another protocol version") {
  struct Row {
    Bytes frame;
    const char* expected;
  };
  Bytes v2 = hello_frame(1, 2, "plan-abc");
  v2[5] = 2;  // protocol version 2
  const std::vector<Row> rows{
      {hello_frame(7, 2, "plan-abc"), "claims rank 7, but ranks are 0..1"},
      {hello_frame(-1, 2, "plan-abc"), "claims rank -1, but ranks are 0..1"},
      {hello_frame(0, 2, "plan-abc"), "a second process claims rank 0 (at 127.0.0.1:"},
      {v2, "speaks rendezvous protocol 2, rank 0 speaks 1 (mixed fsdpx versions)"},
  };
  for (const Row& row : rows) {
    const int port = net::pick_free_port();
    std::string error;
    std::thread server([&] { error = error_of_rank([&] { Rendezvous::join(options(port, 0, 2, 2.0)); }); });
    net::Fd fd = raw_client(port, row.frame);
    server.join();
    CAPTURE(error);
    CHECK(contains(error, row.expected));
    CHECK(error_sent_to(fd) == error);  // the offender was told too
  }
}

TEST_CASE("rendezvous: port probes and garbage are ignored; a rank that joins and leaves is named") {
  const int port = net::pick_free_port();
  auto errors = run_ranks(2, [&](int rank) {
    if (rank == 1) {
      raw_client(port, {});                       // connect and close at once (a port probe)
      net::Fd junk = raw_client(port, Bytes(64, 'x'));  // not our magic: dropped
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Rendezvous rv = Rendezvous::join(options(port, rank, 2, 2.0));
    if (rv.broadcast(rank == 0 ? unique_id() : Bytes{}) != unique_id()) throw std::runtime_error("payload");
  });
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());

  // A rank that sent its hello and then closed, before everyone joined: rank 0 fails at once.
  const int port2 = net::pick_free_port();
  const auto start = std::chrono::steady_clock::now();
  std::thread quitter([&] { raw_client(port2, hello_frame(2, 3, "plan-abc")); });  // closes at once
  const std::string error = error_of_rank([&] { Rendezvous::join(options(port2, 0, 3, 5.0)); });
  quitter.join();
  CHECK(contains(error, "rank 2 closed its connection before all ranks joined"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

namespace {

// Ranks 1..n-1 as forked processes (the test process is rank 0). A child reports through its exit
// status: 0 when `child` returned true. Children only use the rendezvous, then _exit().
std::vector<int> fork_ranks(int n, const std::function<bool(int)>& child) {
  std::vector<pid_t> pids;
  std::fflush(nullptr);  // a child must not print the parent's buffered output again
  for (int rank = 1; rank < n; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      bool ok = false;
      try {
        ok = child(rank);
      } catch (...) {
      }
      ::_exit(ok ? 0 : 1);
    }
    pids.push_back(pid);
  }
  return pids;
}

int exit_status_of(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("rendezvous: across forked processes; a process that leaves after joining is named") {
  const int port = net::pick_free_port();
  const std::vector<pid_t> pids = fork_ranks(4, [&](int rank) {
    Rendezvous rv = Rendezvous::join(options(port, rank, 4));
    const std::vector<Bytes> all = rv.exchange({std::uint8_t(rank)});
    return rv.broadcast({}) == unique_id() && all.size() == 4 && all[3] == Bytes{3};
  });
  Rendezvous rv = Rendezvous::join(options(port, 0, 4));
  CHECK(rv.exchange({0}).size() == 4);
  CHECK(rv.broadcast(unique_id()) == unique_id());
  for (pid_t pid : pids) CHECK(exit_status_of(pid) == 0);

  // Rank 2 exits right after joining: the broadcast fails on every rank, naming rank 2.
  const int port2 = net::pick_free_port();
  const std::string expected = "rendezvous at 127.0.0.1:" + std::to_string(port2) +
                               ": rank 2 closed its connection during the broadcast";
  const std::vector<pid_t> pids2 = fork_ranks(4, [&](int rank) {
    Rendezvous rv2 = Rendezvous::join(options(port2, rank, 4, 2.0));
    if (rank == 2) ::_exit(0);
    return error_of_rank([&] { rv2.broadcast({}); }) == expected;
  });
  const std::string error = error_of_rank([&] {
    Rendezvous rv2 = Rendezvous::join(options(port2, 0, 4, 2.0));
    rv2.broadcast(unique_id());
  });
  CHECK(error == expected);
  for (pid_t pid : pids2) CHECK(exit_status_of(pid) == 0);
}

TEST_CASE("format_ranks: singular, lists and ranges") {
  CHECK(format_ranks({3}) == "rank 3");
  CHECK(format_ranks({3, 2}) == "ranks 2, 3");
  CHECK(format_ranks({1, 2, 3, 4, 5, 9}) == "ranks 1-5, 9");
  CHECK(format_ranks({7, 1, 3, 2, 8}) == "ranks 1-3, 7, 8");
}

}  // namespace fsdpx
