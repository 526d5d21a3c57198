// executor/comm/heartbeat.cpp — the heartbeat thread of heartbeat.h.
#include "executor/comm/heartbeat.h"

#include <algorithm>
#include <chrono>

namespace fsdpx {

void HeartbeatThread::start(double interval_s, std::function<void()> beat) {
  stop();
  stop_ = false;
  thread_ = std::thread([this, interval_s, beat = std::move(beat)] {
    const auto interval = std::chrono::duration<double>(interval_s);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      beat();
      lock.lock();
      cv_.wait_for(lock, interval, [this] { return stop_; });
    }
  });
}

void HeartbeatThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double heartbeat_interval_s(double timeout_s) { return std::clamp(timeout_s / 5, 0.01, 1.0); }

double silence_limit_s(double timeout_s, double poll_s) {
  return std::max(timeout_s - heartbeat_interval_s(timeout_s) - poll_s, timeout_s / 2);
}

}  // namespace fsdpx
