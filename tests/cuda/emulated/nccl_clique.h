// tests/cuda/emulated/nccl_clique.h — the ranks of one emulated NCCL communicator (a clique) and what runs
// on their streams: collectives that wait until every rank's stream reached the call, then sum in rank
// order in fp32 (bf16 rounded once), as the in-process device communicator; and point-to-point messages
// with NCCL's rendezvous semantics: a send completes only when its receiver has posted the matching
// receive and taken the data, messages between two ranks match in call order (NCCL user guide,
// "Point-to-point communication"). An abort releases every wait. Leaves out NCCL's protocols and channels.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <nccl.h>

namespace fsdpx::cuda::emu {

enum class CollKind { all_gather, reduce_scatter, all_reduce, broadcast };

// One rank's part of a point-to-point group: its sends and receives, each with the sequence number of
// its (sender, receiver) pair taken at call time.
struct P2POp {
  bool send = false;
  int peer = 0;
  std::uint64_t seq = 0;
  void* buf = nullptr;  // const for a send
  std::size_t bytes = 0;
};

class Clique {
 public:
  explicit Clique(int nranks) : nranks_(nranks) {}
  int nranks() const { return nranks_; }
  // Runs on `rank`'s stream: call `seq` of this clique (every rank issues its collectives in one order).
  void collective(std::uint64_t seq, int rank, CollKind kind, const void* in, void* out, std::size_t count,
                  ncclDataType_t type, int root);
  // Runs on `rank`'s stream: posts every send and receive of a group, then completes them (receives copy
  // when their send is posted; sends wait until received). Aborts the process on a size mismatch.
  void point_to_point(int rank, const std::vector<P2POp>& ops);
  void abort();

 private:
  struct Round {
    std::vector<const void*> in;
    int arrived = 0, computed = 0, left = 0;
  };
  struct Message {
    const void* buf = nullptr;
    std::size_t bytes = 0;
    bool taken = false;
  };
  bool wait(std::unique_lock<std::mutex>& lk, const std::function<bool()>& ready);

  const int nranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::map<std::uint64_t, Round> rounds_;
  std::map<std::tuple<int, int, std::uint64_t>, Message> mailbox_;  // (sender, receiver, seq)
};

}  // namespace fsdpx::cuda::emu
