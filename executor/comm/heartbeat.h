// executor/comm/heartbeat.h — a thread that calls `beat` every interval until stopped: the TCP mesh sends
// a heartbeat frame to every peer with it, so a peer that goes silent (SIGSTOP, a hung process, a dead
// node that keeps its TCP connection) is told apart from one that is only slow, and named within the
// communication timeout (PyTorch's TCPStore heartbeat monitor and NCCL watchdog play these roles; torchtitan
// sets 100 s for training steps). Leaves out what a beat sends and what silence means: tcp_mesh.h.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace fsdpx {

class HeartbeatThread {
 public:
  HeartbeatThread() = default;
  ~HeartbeatThread() { stop(); }
  HeartbeatThread(const HeartbeatThread&) = delete;
  HeartbeatThread& operator=(const HeartbeatThread&) = delete;

  // Calls beat() now and then every interval_s, on a thread of its own, until stop().
  void start(double interval_s, std::function<void()> beat);
  // Stops and joins the thread (idempotent); never from inside beat().
  void stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The interval between two heartbeats for a communication timeout: a fifth of it, at most 1 s, so that
// several beats fit in a timeout.
double heartbeat_interval_s(double timeout_s);

// How long a peer may be silent before it is named, so that one that stops right after a heartbeat is
// named within timeout_s of stopping by a waiter that looks every poll_s: timeout_s less one heartbeat
// interval (it may have stopped up to one interval after its last beat) and one poll, but never under
// half the timeout (a live peer then has missed at least two beats).
double silence_limit_s(double timeout_s, double poll_s);

}  // namespace fsdpx
