// executor/comm/watchdog.cpp — the watchdog's polling pass and thread. A pass snapshots the entries,
// polls them outside the lock (a poll may take a CUDA or NCCL call's time), then drops the finished
// ones; the first failure or timeout in registration order wins, so the message is reproducible.
#include "executor/comm/watchdog.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {
namespace {

// "all_gather ag.u3.mb0.fwd on dp_shard", or "all_gather on dp_shard" without an op name.
std::string describe(const WatchedCollective& c) {
  return c.op.empty() ? fmt::format("{} on {}", c.collective, c.group)
                      : fmt::format("{} {} on {}", c.collective, c.op, c.group);
}

}  // namespace

std::string watchdog_timeout_message(const WatchedCollective& c, double timeout_s, double elapsed_s) {
  return fmt::format("rank {}: {} did not complete within {:g} s (in flight {:.1f} s); aborting the communicators",
                     c.rank, describe(c), timeout_s, elapsed_s);
}

std::string watchdog_failure_message(const WatchedCollective& c, const std::string& error, double elapsed_s) {
  return fmt::format("rank {}: {} failed after {:.1f} s: {}; aborting the communicators", c.rank, describe(c),
                     elapsed_s, error);
}

Watchdog::Watchdog(WatchdogOptions options, AbortFn on_abort) : options_(options), on_abort_(std::move(on_abort)) {
  FSDP_CHECK(options_.timeout_s > 0, "Watchdog: timeout_s must be positive");
  FSDP_CHECK(options_.poll_interval_s > 0, "Watchdog: poll_interval_s must be positive");
  FSDP_CHECK(static_cast<bool>(on_abort_), "Watchdog: on_abort is required");
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void Watchdog::stop() {
  if (!thread_.joinable()) return;
  FSDP_CHECK(thread_.get_id() != std::this_thread::get_id(), "Watchdog::stop called from its own thread");
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::watch(WatchedCollective c) { watch(std::move(c), Clock::now()); }

void Watchdog::watch(WatchedCollective c, Clock::time_point start) {
  FSDP_CHECK(static_cast<bool>(c.poll), "Watchdog::watch: the collective needs a poll function");
  auto e = std::make_shared<Entry>(Entry{std::move(c), start});
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) entries_.push_back(std::move(e));
}

bool Watchdog::poll_once(Clock::time_point now) {
  std::lock_guard<std::mutex> pass(pass_mu_);
  std::vector<std::shared_ptr<Entry>> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return false;
    snapshot = entries_;
  }
  std::vector<const Entry*> finished;
  std::string msg;
  for (const auto& e : snapshot) {
    const PollStatus s = e->c.poll();
    const double elapsed_s = std::chrono::duration<double>(now - e->start).count();
    if (s.state == PollStatus::State::done) {
      finished.push_back(e.get());
    } else if (s.state == PollStatus::State::failed) {
      msg = watchdog_failure_message(e->c, s.error, elapsed_s);
      break;
    } else if (elapsed_s > options_.timeout_s) {
      msg = watchdog_timeout_message(e->c, options_.timeout_s, elapsed_s);
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(entries_, [&](const std::shared_ptr<Entry>& e) {
      return std::find(finished.begin(), finished.end(), e.get()) != finished.end();
    });
    if (msg.empty()) return false;
    aborted_ = true;
    message_ = msg;
    entries_.clear();  // nothing is polled after an abort; the polls' resources are released here
  }
  on_abort_(msg);
  return true;
}

void Watchdog::run() {
  const auto interval = std::chrono::duration<double>(options_.poll_interval_s);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && !aborted_) {
    cv_.wait_for(lock, interval, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    poll_once(Clock::now());
    lock.lock();
  }
}

std::size_t Watchdog::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

bool Watchdog::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

std::string Watchdog::abort_message() const {
  std::lock_guard<std::mutex> lock(mu_);
  return message_;
}

}  // namespace fsdpx
