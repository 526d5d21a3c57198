// tests/executor/test_all_to_all.cpp — all-to-all(v) (executor/comm/all_to_all.h) on the thread and TCP
// communicators: every chunk lands at its (sender, receiver) place with its contents, variable and empty
// chunks included, in a split group, and apart from a pipeline stream on another tag.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "executor/comm/all_to_all.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/thread_communicator.h"
#include "executor/launch/socket_io.h"
#include "tests/executor/rendezvous_fixtures.h"

namespace fsdpx {
namespace {

// Element i of the chunk rank `from` sends to rank `to`: identifies all three.
double value(int from, int to, std::int64_t i) { return from * 1000.0 + to * 10.0 + double(i) / 100.0; }

// Rank r sends (r + p) % 3 elements to rank p (some chunks empty), after a message on tag 5 to its next rank
// (none on one rank) that it receives only after the exchange.
void exchange_and_check(Communicator& c) {
  const int n = c.size(), r = c.rank();
  double note = r;
  if (n > 1) c.send(&note, 1, (r + 1) % n, 5);
  std::vector<std::int64_t> counts;
  std::vector<double> in;
  for (int p = 0; p < n; ++p) {
    counts.push_back((r + p) % 3);
    for (std::int64_t i = 0; i < counts.back(); ++i) in.push_back(value(r, p, i));
  }
  std::vector<double> out;
  const std::vector<std::int64_t> got = all_to_allv(c, in.data(), counts, out, 9);
  std::size_t at = 0;
  for (int q = 0; q < n; ++q) {
    if (got[std::size_t(q)] != (q + r) % 3) throw std::runtime_error(fmt::format("rank {}: count from {}", r, q));
    for (std::int64_t i = 0; i < got[std::size_t(q)]; ++i)
      if (out[at++] != value(q, r, i)) throw std::runtime_error(fmt::format("rank {}: element {} from {}", r, i, q));
  }
  if (at != out.size()) throw std::runtime_error("all_to_allv: extra elements");
  std::vector<float> fin(std::size_t(2 * n)), fout(fin.size());
  for (int p = 0; p < n; ++p) fin[std::size_t(2 * p)] = float(r), fin[std::size_t(2 * p + 1)] = float(p);
  all_to_all(c, fin.data(), fout.data(), 2, 9);
  for (int q = 0; q < n; ++q)
    if (fout[std::size_t(2 * q)] != float(q) || fout[std::size_t(2 * q + 1)] != float(r))
      throw std::runtime_error(fmt::format("rank {}: all_to_all chunk from {}", r, q));
  if (n > 1) c.recv(&note, 1, (r + n - 1) % n, 5);
  if (note != double((r + n - 1) % n)) throw std::runtime_error("the tag-5 message was mixed up");
}

}  // namespace

TEST_CASE("all_to_all(v) on threads: every chunk at its place, empty chunks included") {
  for (int n : {1, 2, 3, 4}) {
    CAPTURE(n);
    CHECK_NOTHROW(run_ranks(n, exchange_and_check));
  }
}

TEST_CASE("all_to_all(v) on TCP") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    const int port = net::pick_free_port();
    const auto errors = test::run_ranks(n, [&](int r) {
      Rendezvous rdzv = Rendezvous::join(test::options(port, r, n, 10.0));
      auto comm = make_tcp_communicator(rdzv, 20.0);
      exchange_and_check(*comm);
    });
    for (const std::string& e : errors) CHECK(e == "");
  }
}

TEST_CASE("all_to_all in a split group (ep inside dp_shard) addresses the group's ranks") {
  run_ranks(4, [](Communicator& c) {
    auto ep = c.split(c.rank() / 2, c.rank());  // {0, 1} and {2, 3}
    const float base = float(c.rank() / 2 * 100);
    std::vector<float> in{base + float(ep->rank() * 10), base + float(ep->rank() * 10 + 1)}, out(2);
    all_to_all(*ep, in.data(), out.data(), 1, 3);
    CHECK(out[0] == base + float(ep->rank()));
    CHECK(out[1] == base + float(10 + ep->rank()));
  });
}

}  // namespace fsdpx
