// executor/comm/communicator.h — the collective operations the FSDP runtime needs (all-gather,
// reduce-scatter, all-reduce, broadcast, barrier, split into sub-groups) and the point-to-point send and
// receive of pipeline parallelism, on fp32 and fp64 host buffers.
// Reductions are sums taken in rank order 0..n-1, so results never depend on timing (floating-point
// addition is not associative: a fixed order makes them bit-deterministic). Leaves out averaging (the
// caller scales), asynchronous handles and device buffers: the NCCL backend has its own device interface.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/collective.h"

namespace fsdpx {

// Thrown on every rank of a group when one rank aborted it (with that rank's message) or when a
// collective timed out or was called inconsistently (different op or count on different ranks).
struct CommAborted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class ElemType { f32, f64 };

// What a host communicator call is, as the implementations tag it (thread slots, TCP frames) and name it
// in messages: one of the shared collectives (core/collective.h, whose names it uses), or the group's
// own barrier and split. Point-to-point messages carry kSendRecv.
enum CollectiveOp : std::uint32_t {
  kAllGather = 1 + std::uint32_t(Collective::all_gather),
  kReduceScatter = 1 + std::uint32_t(Collective::reduce_scatter),
  kAllReduce = 1 + std::uint32_t(Collective::all_reduce),
  kBroadcast = 1 + std::uint32_t(Collective::broadcast),
  kSendRecv = 1 + std::uint32_t(Collective::send_recv),
  kBarrier = 1 + std::uint32_t(kCollectiveCount),
  kSplit,
};
inline const char* collective_op_name(std::uint32_t op) {
  if (op == kBarrier) return "barrier";
  if (op == kSplit) return "split";
  if (op >= 1 && op <= std::uint32_t(kCollectiveCount)) return collective_name(Collective(op - 1));
  return "?";
}

template <class T>
constexpr ElemType elem_type_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double only");
  return std::is_same_v<T, float> ? ElemType::f32 : ElemType::f64;
}

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // in [count] -> out [size*count]; rank r's input lands at out + r*count. In place when
  // in == out + rank*count (NCCL's convention: NCCL user guide, "In-place Operations").
  template <class T>
  void all_gather(const T* in, T* out, std::int64_t count) {
    all_gather_impl(in, out, count, elem_type_of<T>());
  }
  // in [size*count] -> out [count] = sum over ranks of chunk `rank` of their inputs, in rank order.
  // In place when out == in + rank*count.
  template <class T>
  void reduce_scatter(const T* in, T* out, std::int64_t count) {
    reduce_scatter_impl(in, out, count, elem_type_of<T>());
  }
  // buf [count] <- sum over ranks, in rank order; every rank gets bit-identical results.
  template <class T>
  void all_reduce(T* buf, std::int64_t count) {
    all_reduce_impl(buf, count, elem_type_of<T>());
  }
  // buf [count] <- root's buf.
  template <class T>
  void broadcast(T* buf, std::int64_t count, int root) {
    broadcast_impl(buf, count, root, elem_type_of<T>());
  }
  virtual void barrier() = 0;
  // Point to point (pipeline stages). send copies buf [count] out and returns without waiting for the
  // receiver (a buffered send: with blocking sends a 1F1B schedule deadlocks, since neighbouring stages
  // post their sends and receives in different orders); recv blocks until the message arrives. Messages
  // from one rank to another with one tag arrive in the order sent; tags keep independent streams apart
  // (activations, gradients). A receive whose count or type differs from the message's fails the family.
  template <class T>
  void send(const T* buf, std::int64_t count, int peer, int tag) {
    send_impl(buf, count, elem_type_of<T>(), peer, tag);
  }
  template <class T>
  void recv(T* buf, std::int64_t count, int peer, int tag) {
    recv_impl(buf, count, elem_type_of<T>(), peer, tag);
  }
  // A send that never waits for the receiver, as an NCCL send enqueued on a stream (or MPI_Isend): it
  // completes when the receiver takes it, which wait_sends awaits for every such send so far. With
  // buffered sends (the default) it completes at once. A backend whose sends run in program order on its
  // host thread needs it: with sends that complete only at their receive, neighbouring pipeline stages that
  // each send before they receive would otherwise wait on each other (1F1B's steady state).
  template <class T>
  void post_send(const T* buf, std::int64_t count, int peer, int tag) {
    post_send_impl(buf, count, elem_type_of<T>(), peer, tag);
  }
  virtual void wait_sends() {}
  // Collective: ranks with the same color form a new group, ordered by (key, old rank). As MPI_Comm_split
  // and ncclCommSplit; used for the dp_shard and dp_replicate axes of HSDP.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // Marks the whole group family failed: every rank blocked in (or later entering) a collective throws
  // CommAborted carrying `msg`. Safe to call from any thread, more than once (the first message wins).
  virtual void abort(const std::string& msg) = 0;

 protected:
  virtual void all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) = 0;
  virtual void reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) = 0;
  virtual void all_reduce_impl(void* buf, std::int64_t count, ElemType t) = 0;
  virtual void broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) = 0;
  virtual void send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) = 0;
  virtual void recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) = 0;
  virtual void post_send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) {
    send_impl(buf, count, t, peer, tag);
  }
};

}  // namespace fsdpx
