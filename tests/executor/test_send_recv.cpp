// tests/executor/test_send_recv.cpp — point-to-point messages of the thread and TCP communicators, as
// pipeline stages use them: every rank of a ring sends all its messages (activations forward with tag
// 0, gradients backward with tag 1, some of 4 MiB, more than a loopback socket buffers) before it
// receives any, so a send that waited for its receiver would deadlock; receives take the tags in the
// other order and collectives run in between, so frames are matched by tag and kept apart from the
// collectives'. A receive of the wrong size and a missing message end in CommAborted, never a hang.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "executor/comm/tcp_communicator.h"
#include "executor/comm/thread_communicator.h"
#include "executor/launch/socket_io.h"
#include "tests/executor/rendezvous_fixtures.h"

namespace fsdpx {
namespace {

constexpr int kMessages = 3;
constexpr std::int64_t kBig = std::int64_t(1) << 20;  // floats: 4 MiB

// Message k of rank `from` on `tag`: its length and contents identify it.
std::vector<float> message(int from, int tag, int k) {
  const std::int64_t n = k == 1 ? kBig : 5 + k;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = float(from * 1000 + tag * 100 + k) + float(i % 7) / 8.0f;
  return v;
}

// Sends everything first (tag 0 to the next rank, tag 1 to the previous), then an all-reduce, then
// receives tag 1 before tag 0, with a double all-reduce between messages. Throws on a wrong message.
void ring(Communicator& c) {
  const int n = c.size(), r = c.rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int k = 0; k < kMessages; ++k) {
    c.send(message(r, 0, k).data(), std::int64_t(message(r, 0, k).size()), next, 0);
    c.send(message(r, 1, k).data(), std::int64_t(message(r, 1, k).size()), prev, 1);
  }
  std::vector<float> ones(3, 1.0f);
  c.all_reduce(ones.data(), 3);
  if (ones[0] != float(n)) throw std::runtime_error("all_reduce after the sends is wrong");
  for (int tag : {1, 0})
    for (int k = 0; k < kMessages; ++k) {
      const int from = tag == 0 ? prev : next;
      const std::vector<float> want = message(from, tag, k);
      std::vector<float> got(want.size());
      c.recv(got.data(), std::int64_t(got.size()), from, tag);
      if (got != want) throw std::runtime_error(fmt::format("rank {}: message {} of tag {} is wrong", r, k, tag));
      double x = 1.0;
      c.all_reduce(&x, 1);
    }
}

std::vector<std::string> run_tcp(int n, double timeout_s, const std::function<void(Communicator&)>& fn) {
  const int port = net::pick_free_port();
  return test::run_ranks(n, [&](int r) {
    Rendezvous rdzv = Rendezvous::join(test::options(port, r, n, 10.0));
    auto comm = make_tcp_communicator(rdzv, timeout_s);
    fn(*comm);
  });
}

}  // namespace

TEST_CASE("send/recv: buffered sends, FIFO per tag, apart from collectives (threads)") {
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    CHECK_NOTHROW(run_ranks(n, ring));
  }
}

TEST_CASE("send/recv: buffered sends, FIFO per tag, apart from collectives (TCP)") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    for (const std::string& e : run_tcp(n, 20.0, ring)) CHECK(e == "");
  }
}

TEST_CASE("send/recv in a split group addresses the group's ranks") {
  run_ranks(4, [](Communicator& c) {
    auto pair = c.split(c.rank() % 2, c.rank());  // {0, 2} and {1, 3}
    float x = float(c.rank());
    if (pair->rank() == 0) {
      pair->send(&x, 1, 1, 7);
    } else {
      pair->recv(&x, 1, 0, 7);
      CHECK(x == float(c.rank() - 2));
    }
  });
}

TEST_CASE("send/recv: a wrong size or a missing message aborts, quickly") {
  auto wrong_size = [](Communicator& c) {
    std::vector<float> v(4, 1.0f);
    if (c.rank() == 0) c.send(v.data(), 4, 1, 0);
    else c.recv(v.data(), 3, 0, 0);
  };
  CHECK_THROWS_WITH_AS(run_ranks(2, wrong_size), doctest::Contains("mismatched send_recv"), CommAborted);
  CHECK(run_tcp(2, 5.0, wrong_size)[1].find("mismatched send_recv") != std::string::npos);  // rank 0 sent and left

  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_ranks(
                           2,
                           [](Communicator& c) {
                             float x = 0;
                             if (c.rank() == 1) c.recv(&x, 1, 0, 0);  // rank 0 never sends
                           },
                           0.2),
                       doctest::Contains("timed out after 0.2 s waiting for a message from rank 0"), CommAborted);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
}

}  // namespace fsdpx
