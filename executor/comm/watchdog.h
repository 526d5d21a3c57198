// executor/comm/watchdog.h — a thread that watches the collectives a rank has in flight and aborts the
// communicators, once, with a one-line message naming the rank, the group, the collective and the time
// it was in flight, when one of them fails or runs past a timeout (PyTorch's ProcessGroupNCCL watchdog;
// NCCL has no collective timeout of its own: the NCCL user guide polls ncclCommGetAsyncError and calls
// ncclCommAbort). Host-only: what "in flight" means is
// a poll function (for NCCL: cudaEventQuery + ncclCommGetAsyncError). Leaves out a heartbeat monitor
// of the watchdog thread itself and any recovery: an abort is final.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fsdpx {

// What a poll reports about one collective.
struct PollStatus {
  enum class State { pending, done, failed };
  State state = State::pending;
  std::string error;  // failed: what went wrong, e.g. "ncclRemoteError: remote process exited"

  static PollStatus pending() { return {}; }
  static PollStatus done() { return {State::done, {}}; }
  static PollStatus failed(std::string what) { return {State::failed, std::move(what)}; }
};

// One collective a rank has issued and not yet seen complete.
struct WatchedCollective {
  int rank = 0;            // the rank that issued it (its rank in the root communicator)
  std::string group;       // process group: "dp_shard", "dp_replicate", "tp", "world"
  std::string collective;  // "all_gather", "reduce_scatter", "all_reduce", "broadcast"
  std::string op;          // step-program op name, "ag.u3.mb0.fwd"; may be empty
  // Called from the watchdog thread, never concurrently with itself; must not block.
  std::function<PollStatus()> poll;
};

struct WatchdogOptions {
  double timeout_s = 600.0;      // per collective, from registration; PyTorch's default (PR #110947)
  double poll_interval_s = 0.1;  // time between two polling passes of the thread
};

// "rank 1: all_gather ag.u3.mb0.fwd on dp_shard did not complete within 600 s (in flight 600.1 s);
// aborting the communicators" — or "... failed after 2.5 s: <error>; aborting the communicators".
std::string watchdog_timeout_message(const WatchedCollective& c, double timeout_s, double elapsed_s);
std::string watchdog_failure_message(const WatchedCollective& c, const std::string& error, double elapsed_s);

// Thread-safe. watch() from any rank thread; the polling thread (start()) or a test (poll_once) checks
// the entries in registration order, drops the finished ones and, on the first failure or timeout, calls
// on_abort once. After the abort nothing is polled or accepted any more.
class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using AbortFn = std::function<void(const std::string& msg)>;

  Watchdog(WatchdogOptions options, AbortFn on_abort);
  ~Watchdog();  // stop()
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts the polling thread (idempotent). Without it, nothing is polled unless poll_once is called.
  void start();
  // Stops and joins the polling thread; must not be called from on_abort. Entries stay registered.
  void stop();

  // Registers a collective issued at `start` (default: now). Ignored after an abort.
  void watch(WatchedCollective c);
  void watch(WatchedCollective c, Clock::time_point start);

  // One pass at time `now`: polls every entry once; returns true when this pass called on_abort.
  // on_abort runs on the calling thread, outside the watchdog's locks.
  bool poll_once(Clock::time_point now);

  std::size_t in_flight() const;
  bool aborted() const;
  std::string abort_message() const;  // "" before an abort
  const WatchdogOptions& options() const { return options_; }

 private:
  struct Entry {
    WatchedCollective c;
    Clock::time_point start;
  };
  void run();

  const WatchdogOptions options_;
  const AbortFn on_abort_;
  mutable std::mutex mu_;  // entries_, aborted_, message_, stop_
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Entry>> entries_;
  bool aborted_ = false;
  bool stop_ = false;
  std::string message_;
  std::mutex pass_mu_;  // one polling pass at a time: polls never run concurrently with themselves
  std::thread thread_;
};

}  // namespace fsdpx
