// executor/cuda/device_thread_communicator.h — an in-process DeviceCommunicator: N ranks are threads of
// one process on ONE device, sharing a ThreadGroup of executor/comm/thread_communicator.h (its host
// rendezvous, abort family, split and timeout); the GPU work is cudaMemcpyAsync and a rank-order sum
// kernel (rank_sum.h), so results are bit-identical across ranks and runs (a fixed summation order:
// floating-point addition is not associative). For tests and single-GPU runs of multi-rank plans;
// leaves out speed (every rank reads every peer's buffer) and multi-device use. Point to point: a send
// copies the message into stream-ordered staging memory on its stream, records an event and posts both
// to the receiver's mailbox (ThreadGroup::post) without waiting; the receiver takes them in the order
// they were sent (one mailbox per peer: no tags, as NCCL), makes its stream wait on the event, copies
// and frees the staging memory; in rendezvous mode (P2PMode) the sender then waits until it was taken.
// The receiver's destructor frees the messages to it never taken (an aborted run).
//
// Stream ordering, per collective on rank r (stream s_r, events ready_r and done_r of this communicator):
//   1. record ready_r on s_r                        (r's input is ready in s_r's order)
//   2. host rendezvous A: publish {in, out, events}  (every rank's ready is recorded)
//   3. s_r waits on every peer's ready_j; enqueue the reads: copies of peers' inputs / the rank-order
//      sum kernel, in rank order 0..n-1
//   4. record done_r on s_r                          (r's reads of its peers' buffers are enqueued)
//   5. host rendezvous B                             (every rank's done is recorded)
//   6. s_r waits on every peer's done_j              (nobody reads r's buffers any more)
//   7. in-place all-reduce only: copy the fp32/bf16 sum from a scratch buffer into `out`
// Buffer lifetimes: after step 6 nothing later on s_r, nor on a stream ordered after it, can overwrite or
// free r's input before every peer's read of it ran; the peers' ready/done events are waited on between
// the rendezvous that make them current, so re-recording them for the next collective cannot race.
// Every wait refers to a record already enqueued, so the waits cannot deadlock on the GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/comm/thread_communicator.h"
#include "executor/cuda/device_communicator.h"

namespace fsdpx::cuda {

class DeviceThreadCommunicator final : public DeviceCommunicator {
 public:
  // Rank `rank` of `group`; its collectives run on `device` (set as current at each call).
  DeviceThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, int device, std::string name);
  ~DeviceThreadCommunicator() override;  // frees the staging memory of messages to it never received

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& name() const override { return name_; }
  std::unique_ptr<DeviceCommunicator> split(int color, int key, const std::string& name) override;
  std::unique_ptr<DeviceCommunicator> dup(const std::string& name) override { return split(0, rank_, name); }
  void abort(const std::string& msg) override { group_->abort(msg); }
  bool aborted() const override { return group_->family()->aborted(); }
  std::string abort_message() const override { return group_->family()->message(); }

 protected:
  void enqueue(const CollectiveCall& c) override;
  void enqueue_p2p(const std::vector<P2PCall>&, DType, cudaStream_t, std::string_view) override;

 private:
  struct Events;  // this rank's ready/done events; peers hold a reference while they wait on them
  void enqueue_reads(const CollectiveCall& c, const std::vector<ThreadSlot>& peers, void* sum_out);

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
  int device_;
  std::string name_;
  std::shared_ptr<Events> events_;
};

// One communicator per rank of a new root group on `device`. Rank r's communicator is used by one
// thread at a time (normally rank r's thread); run them with run_rank_threads. `p2p`: rendezvous makes a
// send_recv batch return only once the peers took its sends (NCCL's semantics; enqueue_p2p).
std::vector<std::unique_ptr<DeviceCommunicator>> make_device_thread_communicators(int size, int device = 0,
                                                                                 const std::string& name = "world",
                                                                                 double timeout_s = 300.0,
                                                                                 P2PMode p2p = P2PMode::buffered);

}  // namespace fsdpx::cuda
