// tests/executor/rendezvous_fixtures.h — helpers shared by the rendezvous tests: options for a rank
// on 127.0.0.1, ranks run as threads with their errors collected (checked afterwards on the test's
// thread, so no doctest assertion races), and a recognisable 128-byte stand-in for an NCCL unique id.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "executor/launch/rendezvous.h"

namespace fsdpx::test {

inline RendezvousOptions options(int port, int rank, int world_size, double timeout_s = 5.0,
                                 const std::string& addr = "127.0.0.1",
                                 const std::string& fingerprint = "plan-abc") {
  return RendezvousOptions{addr, port, rank, world_size, fingerprint, timeout_s};
}

// The error `fn` threw ("" when it returned).
inline std::string error_of_rank(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Runs fn(i) for i in 0..n-1 on n threads; returns each thread's error ("" when it returned).
inline std::vector<std::string> run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { errors[std::size_t(i)] = error_of_rank([&] { fn(i); }); });
  for (std::thread& t : threads) t.join();
  return errors;
}

// 128 bytes covering 0x00 and 0xff and every position (an NCCL unique id is opaque bytes).
inline std::vector<std::uint8_t> unique_id() {
  std::vector<std::uint8_t> id(128);
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = std::uint8_t((i * 37 + 11) & 0xff);
  id[0] = 0x00;
  id[127] = 0xff;
  return id;
}

}  // namespace fsdpx::test
