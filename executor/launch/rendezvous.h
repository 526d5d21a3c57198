// executor/launch/rendezvous.h — a small TCP rendezvous that lets N ranks meet before NCCL starts:
// rank 0 listens on MASTER_PORT, the others connect to MASTER_ADDR:MASTER_PORT (retrying until the
// deadline) and introduce themselves (rank, world size, a job fingerprint). Rank 0 checks them, then
// broadcasts an opaque payload (the 128-byte NCCL unique id) or gathers one blob per rank. Every wait
// has a deadline, and every failure ends every connected rank with the same message naming the
// offending ranks (llm.c's "tcp" init in llmc/zero.cuh, with checks and timeouts). Leaves out
// re-joining after a failure, encryption and anything NCCL-specific.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsdpx {

namespace rdzv {
struct State;  // the connections (rendezvous.cpp)
}

// The rendezvous failed: a rank did not come, disagreed, or went away. The message is one line,
// starts with "rendezvous at host:port:" and names the ranks at fault.
struct RendezvousError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RendezvousOptions {
  std::string master_addr = "127.0.0.1";  // rank 0's host: IPv4 address or hostname
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  // Must be equal on every rank (e.g. the plan's hash): a rank started with another plan or fsdpx
  // version fails the rendezvous instead of joining a mismatched job.
  std::string fingerprint;
  // Rank 0 waits this long for all ranks to join, and for all replies in each later call. The other
  // ranks keep trying to connect for this long, then wait up to timeout_s + 1 s for rank 0's answer
  // (so rank 0's error message, naming the missing ranks, normally reaches them first).
  double timeout_s = 300.0;
};

// The options of a launched rank: its rank, the world and MASTER_ADDR:MASTER_PORT from the launcher's
// variables (launch_env.h), and the job's fingerprint.
struct LaunchEnv;
RendezvousOptions rendezvous_options(const LaunchEnv& env, const std::string& fingerprint);

class Rendezvous {
 public:
  // Meets every rank. Returns once all world_size ranks have joined with matching world sizes and
  // fingerprints; throws RendezvousError otherwise. World size 1 needs no network.
  static Rendezvous join(const RendezvousOptions& options);

  Rendezvous(Rendezvous&&) noexcept;
  Rendezvous& operator=(Rendezvous&&) noexcept;
  ~Rendezvous();

  int rank() const;
  int world_size() const;

  // Rank 0's `payload` on every rank (the argument is ignored elsewhere). Returns only after every
  // rank has received it (an acknowledged barrier), so either all ranks go on to ncclCommInitRank or
  // all throw: none is left waiting in NCCL for a peer that failed here.
  std::vector<std::uint8_t> broadcast(const std::vector<std::uint8_t>& payload);

  // Every rank's `mine`, indexed by rank (an all-gather through rank 0; e.g. hostnames).
  std::vector<std::vector<std::uint8_t>> exchange(const std::vector<std::uint8_t>& mine);

  // A host name or IPv4 address at which the other ranks can reach this process: MASTER_ADDR on rank 0,
  // elsewhere the local address of the connection to rank 0 (the TCP communicator listens there).
  std::string local_host() const;

  // Returns when every rank has called barrier().
  void barrier();

 private:
  explicit Rendezvous(std::unique_ptr<rdzv::State> state);
  std::unique_ptr<rdzv::State> state_;
};

// join() + broadcast(): the NCCL unique id from rank 0 to every rank in one call.
std::vector<std::uint8_t> rendezvous_broadcast(const RendezvousOptions& options,
                                               const std::vector<std::uint8_t>& payload_on_rank0);

// "rank 2", "ranks 2, 3", "ranks 1-5, 9" (ascending, runs of three or more as ranges).
std::string format_ranks(const std::vector<int>& ranks);

}  // namespace fsdpx
