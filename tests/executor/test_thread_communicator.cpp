// tests/executor/test_thread_communicator.cpp — collective semantics of the thread communicator with
// 1-4 ranks (in and out of place, float and double), rank-order reduction (bit-identical to a serial
// left fold, whatever the timing), sub-groups for an HSDP mesh, and failure handling: a throwing rank,
// mismatched collectives and a missing rank all end every rank with an error quickly, never a hang.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/comm/thread_communicator.h"

namespace fsdpx {
namespace {

// Values whose float sum depends on order: 1e8 + 1 rounds back to 1e8 in fp32.
template <class T>
T value(int rank, std::int64_t i) {
  const T pattern[] = {T(1e8), T(1), T(-1e8), T(0.5)};
  return pattern[(rank + i) % 4] * T(1 + i % 3);
}

template <class T>
void check_collectives(int n) {
  const std::int64_t count = 5;
  run_ranks(n, [&](Communicator& c) {
    const int r = c.rank();
    CHECK(c.size() == n);
    // all_gather, out of place and in place.
    std::vector<T> in(count), out(std::size_t(count * n)), inplace(std::size_t(count * n));
    for (std::int64_t i = 0; i < count; ++i) in[std::size_t(i)] = value<T>(r, i);
    std::copy(in.begin(), in.end(), inplace.begin() + r * count);
    c.all_gather(in.data(), out.data(), count);
    c.all_gather(inplace.data() + r * count, inplace.data(), count);
    for (int j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < count; ++i) {
        CHECK(out[std::size_t(j * count + i)] == value<T>(j, i));
        CHECK(inplace[std::size_t(j * count + i)] == value<T>(j, i));
      }
    // reduce_scatter: chunk r of Σ_j input_j, folded left in rank order.
    std::vector<T> big(static_cast<std::size_t>(count * n)), mine(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count * n; ++i) big[std::size_t(i)] = value<T>(r, i);
    c.reduce_scatter(big.data(), mine.data(), count);
    c.reduce_scatter(big.data(), big.data() + r * count, count);  // in place
    for (std::int64_t i = 0; i < count; ++i) {
      T expect = value<T>(0, r * count + i);
      for (int j = 1; j < n; ++j) expect += value<T>(j, r * count + i);
      CHECK(mine[std::size_t(i)] == expect);
      CHECK(big[std::size_t(r * count + i)] == expect);
    }
    // all_reduce with a count that does not divide by n (some ranks own empty chunks when n > 2).
    std::vector<T> buf(2);
    for (std::int64_t i = 0; i < 2; ++i) buf[std::size_t(i)] = value<T>(r, i);
    c.all_reduce(buf.data(), 2);
    for (std::int64_t i = 0; i < 2; ++i) {
      T expect = value<T>(0, i);
      for (int j = 1; j < n; ++j) expect += value<T>(j, i);
      CHECK(buf[std::size_t(i)] == expect);
    }
    // broadcast from the last rank.
    std::vector<T> b(3, T(r));
    c.broadcast(b.data(), 3, n - 1);
    for (T v : b) CHECK(v == T(n - 1));
    c.barrier();
  });
}

TEST_CASE("collectives with 1 to 4 ranks, float and double") {
  for (int n = 1; n <= 4; ++n) {
    CAPTURE(n);
    check_collectives<float>(n);
    check_collectives<double>(n);
  }
}

TEST_CASE("all_reduce is bit-identical across repeated runs with random delays") {
  std::vector<float> first;
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<float> result(64);
    run_ranks(4, [&](Communicator& c) {
      std::this_thread::sleep_for(std::chrono::microseconds((rep * 7 + c.rank() * 13) % 50));
      std::vector<float> buf(64);
      for (std::int64_t i = 0; i < 64; ++i) buf[std::size_t(i)] = value<float>(c.rank(), i) * 1.1f;
      c.all_reduce(buf.data(), 64);
      if (c.rank() == 3) result = buf;
    });
    if (rep == 0) first = result;
    CHECK(result == first);
  }
}

TEST_CASE("split builds the dp_shard and dp_replicate groups of a 2x2 mesh") {
  run_ranks(4, [](Communicator& world) {
    const int r = world.rank();
    // dp_shard groups: {0,1}, {2,3}; dp_replicate groups: {0,2}, {1,3}. Key reverses the order in shard.
    auto shard = world.split(r / 2, -r);
    auto replicate = world.split(r % 2, r);
    CHECK(shard->size() == 2);
    CHECK(replicate->size() == 2);
    CHECK(shard->rank() == 1 - r % 2);
    CHECK(replicate->rank() == r / 2);
    double v = r;
    shard->all_reduce(&v, 1);
    CHECK(v == double((r / 2) * 4 + 1));  // 0+1 or 2+3
    double w = r;
    replicate->all_reduce(&w, 1);
    CHECK(w == double(2 * (r % 2) + 2));  // 0+2 or 1+3
  });
}

TEST_CASE("a throwing rank brings the others down with its message, quickly") {
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> aborted_with_message{0};
  std::mutex mu;
  std::string error, seen;
  try {
    run_ranks(4, [&](Communicator& c) {
      auto sub = c.split(c.rank() % 2, c.rank());
      if (c.rank() == 2) throw std::runtime_error("boom in rank two");
      try {
        float x = 1;
        if (c.rank() == 0) sub->all_reduce(&x, 1);  // rank 0 waits for rank 2 in a sub-group
        else c.all_reduce(&x, 1);
      } catch (const CommAborted& e) {
        if (std::string(e.what()).find("boom in rank two") != std::string::npos) ++aborted_with_message;
        std::lock_guard<std::mutex> lock(mu);
        seen += std::to_string(c.rank()) + ": " + e.what() + "; ";
        throw;
      }
    });
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("error: " << error << ", elapsed " << elapsed_s << " s; peers saw: " << seen);
  CHECK(error == "rank 2: boom in rank two");
  CHECK(aborted_with_message == 3);
  CHECK(elapsed_s < 2.0);
}

TEST_CASE("mismatched collectives and a missing rank end in CommAborted") {
  SUBCASE("different counts") {
    CHECK_THROWS_WITH_AS(run_ranks(2, [](Communicator& c) {
                           std::vector<float> v(5);
                           c.all_reduce(v.data(), c.rank() == 0 ? 4 : 5);
                         }),
                         doctest::Contains("mismatched collectives"), CommAborted);
  }
  SUBCASE("a rank that skips a collective times out") {
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(run_ranks(
                             3,
                             [](Communicator& c) {
                               if (c.rank() != 1) c.barrier();
                             },
                             0.2),
                         doctest::Contains("timed out"), CommAborted);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
  }
}

}  // namespace
}  // namespace fsdpx
