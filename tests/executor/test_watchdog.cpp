// tests/executor/test_watchdog.cpp — the collective watchdog with fake polls: finished collectives are
// dropped, a late or failed one aborts exactly once with a message naming rank, collective, op, group
// and time, the first late entry in registration order is the one named, nothing is accepted after an
// abort; then the polling thread with short timeouts and several registering threads (TSan target).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "executor/comm/watchdog.h"

namespace fsdpx {
namespace {

using Clock = Watchdog::Clock;
using std::chrono::milliseconds;

WatchedCollective collective(int rank, std::string group, std::string coll, std::string op,
                             std::function<PollStatus()> poll) {
  return WatchedCollective{rank, std::move(group), std::move(coll), std::move(op), std::move(poll)};
}

PollStatus never_done() { return PollStatus::pending(); }

// Records every on_abort call.
struct AbortLog {
  std::mutex mu;
  std::vector<std::string> messages;
  Watchdog::AbortFn fn() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(m);
    };
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return messages.size();
  }
};

TEST_CASE("watchdog: finished collectives are dropped and nothing aborts") {
  AbortLog log;
  Watchdog wd({.timeout_s = 10.0, .poll_interval_s = 1.0}, log.fn());
  const auto t0 = Clock::now();
  int polls_left = 2;  // pending twice, then done
  wd.watch(collective(0, "dp_shard", "all_gather", "ag.u0.mb0.fwd",
                      [&] { return polls_left-- > 0 ? PollStatus::pending() : PollStatus::done(); }),
           t0);
  wd.watch(collective(0, "dp_shard", "reduce_scatter", "rs.u0", [] { return PollStatus::done(); }), t0);
  CHECK(wd.in_flight() == 2);
  CHECK_FALSE(wd.poll_once(t0 + milliseconds(100)));
  CHECK(wd.in_flight() == 1);  // the reduce-scatter was done at the first look
  CHECK_FALSE(wd.poll_once(t0 + milliseconds(200)));
  CHECK_FALSE(wd.poll_once(t0 + milliseconds(300)));
  CHECK(wd.in_flight() == 0);
  CHECK_FALSE(wd.aborted());
  CHECK(wd.abort_message().empty());
  CHECK(log.count() == 0);
}

TEST_CASE("watchdog: a collective past the timeout aborts once with rank, op, group and time") {
  AbortLog log;
  Watchdog wd({.timeout_s = 600.0, .poll_interval_s = 1.0}, log.fn());
  const auto t0 = Clock::now();
  wd.watch(collective(1, "dp_shard", "all_gather", "ag.u3.mb0.fwd", never_done), t0);
  CHECK_FALSE(wd.poll_once(t0 + std::chrono::seconds(600)));  // exactly at the limit: not yet
  CHECK(log.count() == 0);
  CHECK(wd.poll_once(t0 + milliseconds(600500)));
  const std::string expect =
      "rank 1: all_gather ag.u3.mb0.fwd on dp_shard did not complete within 600 s (in flight 600.5 s); "
      "aborting the communicators";
  REQUIRE(log.count() == 1);
  CHECK(log.messages[0] == expect);
  CHECK(wd.aborted());
  CHECK(wd.abort_message() == expect);
  CHECK(wd.in_flight() == 0);
  // Once: later passes and later registrations do nothing.
  CHECK_FALSE(wd.poll_once(t0 + std::chrono::seconds(2000)));
  wd.watch(collective(1, "dp_shard", "all_gather", "ag.u4.mb0.fwd", never_done), t0);
  CHECK(wd.in_flight() == 0);
  CHECK_FALSE(wd.poll_once(t0 + std::chrono::seconds(3000)));
  CHECK(log.count() == 1);
}

TEST_CASE("watchdog: a failed poll aborts before the timeout with the poll's error") {
  AbortLog log;
  Watchdog wd({.timeout_s = 600.0, .poll_interval_s = 1.0}, log.fn());
  const auto t0 = Clock::now();
  bool fail = false;
  wd.watch(collective(0, "dp_replicate", "reduce_scatter", "rs.u2",
                      [&] { return fail ? PollStatus::failed("ncclRemoteError: remote process exited") : PollStatus::pending(); }),
           t0);
  CHECK_FALSE(wd.poll_once(t0 + milliseconds(500)));
  fail = true;
  CHECK(wd.poll_once(t0 + milliseconds(1500)));
  REQUIRE(log.count() == 1);
  CHECK(log.messages[0] ==
        "rank 0: reduce_scatter rs.u2 on dp_replicate failed after 1.5 s: ncclRemoteError: remote process exited; "
        "aborting the communicators");
}

TEST_CASE("watchdog: the first late collective in registration order is named; no op name reads cleanly") {
  AbortLog log;
  Watchdog wd({.timeout_s = 1.0, .poll_interval_s = 1.0}, log.fn());
  const auto t0 = Clock::now();
  wd.watch(collective(2, "tp", "all_reduce", "ar.loss", [] { return PollStatus::done(); }), t0);
  wd.watch(collective(2, "tp", "broadcast", "", never_done), t0 + milliseconds(10));
  wd.watch(collective(2, "world", "all_gather", "ag.u0.mb0.fwd", never_done), t0);  // older, registered later
  CHECK(wd.poll_once(t0 + milliseconds(2010)));
  REQUIRE(log.count() == 1);
  CHECK(log.messages[0] ==
        "rank 2: broadcast on tp did not complete within 1 s (in flight 2.0 s); aborting the communicators");
}

TEST_CASE("watchdog: message helpers") {
  const WatchedCollective c = collective(3, "dp_shard", "reduce_scatter", "rs.u7", never_done);
  CHECK(watchdog_timeout_message(c, 0.05, 0.0612) ==
        "rank 3: reduce_scatter rs.u7 on dp_shard did not complete within 0.05 s (in flight 0.1 s); aborting the "
        "communicators");
  CHECK(watchdog_failure_message(c, "cudaErrorLaunchFailure", 12.34) ==
        "rank 3: reduce_scatter rs.u7 on dp_shard failed after 12.3 s: cudaErrorLaunchFailure; aborting the "
        "communicators");
}

TEST_CASE("watchdog: the polling thread lets finished collectives go") {
  std::atomic<int> calls{0};
  Watchdog wd({.timeout_s = 30.0, .poll_interval_s = 0.005}, [&](const std::string&) { ++calls; });
  std::atomic<bool> released{false};
  wd.watch(collective(0, "dp_shard", "all_gather", "ag.u1.mb0.fwd",
                      [&] { return released.load() ? PollStatus::done() : PollStatus::pending(); }));
  wd.start();
  wd.start();  // idempotent
  std::this_thread::sleep_for(milliseconds(20));
  CHECK(wd.in_flight() == 1);
  released = true;
  for (int i = 0; i < 5000 && wd.in_flight() > 0; ++i) std::this_thread::sleep_for(milliseconds(1));
  CHECK(wd.in_flight() == 0);
  wd.stop();
  CHECK(calls.load() == 0);
  CHECK_FALSE(wd.aborted());
}

TEST_CASE("watchdog: the polling thread aborts a hung collective once") {
  std::promise<std::string> aborted;
  std::atomic<int> calls{0};
  Watchdog wd({.timeout_s = 0.05, .poll_interval_s = 0.005}, [&](const std::string& m) {
    if (calls.fetch_add(1) == 0) aborted.set_value(m);
  });
  auto fut = aborted.get_future();
  wd.start();
  wd.watch(collective(1, "dp_shard", "reduce_scatter", "rs.u1", never_done));
  REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const std::string msg = fut.get();
  CHECK(msg.find("rank 1: reduce_scatter rs.u1 on dp_shard did not complete within 0.05 s (in flight ") == 0);
  CHECK(msg.find(" s); aborting the communicators") != std::string::npos);
  std::this_thread::sleep_for(milliseconds(30));  // further passes would call on_abort again if they could
  wd.stop();
  CHECK(calls.load() == 1);
  CHECK(wd.abort_message() == msg);
}

TEST_CASE("watchdog: ranks register concurrently while the thread polls") {
  std::atomic<int> calls{0};
  Watchdog wd({.timeout_s = 30.0, .poll_interval_s = 0.001}, [&](const std::string&) { ++calls; });
  wd.start();
  constexpr int kRanks = 4, kPerRank = 200;
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      for (int i = 0; i < kPerRank; ++i) {
        auto polls = std::make_shared<std::atomic<int>>(i % 3);  // done after 0, 1 or 2 pending polls
        wd.watch(collective(r, "world", "all_reduce", "ar." + std::to_string(i),
                            [polls] { return polls->fetch_sub(1) > 0 ? PollStatus::pending() : PollStatus::done(); }));
        if (i % 50 == 0) std::this_thread::sleep_for(milliseconds(1));
      }
    });
  for (auto& t : ranks) t.join();
  for (int i = 0; i < 5000 && wd.in_flight() > 0; ++i) std::this_thread::sleep_for(milliseconds(1));
  CHECK(wd.in_flight() == 0);
  wd.stop();
  wd.stop();  // idempotent
  CHECK(calls.load() == 0);
  CHECK_FALSE(wd.aborted());
}

}  // namespace
}  // namespace fsdpx
