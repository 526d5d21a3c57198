// executor/cuda/device_communicator.h — the collectives of the CUDA backend on device buffers (bf16 and
// fp32), enqueued on the caller's CUDA stream: all-gather, reduce-scatter (sum), all-reduce (sum),
// broadcast, split into sub-groups (dp_shard, dp_replicate, tp), a duplicate for all-gather /
// reduce-scatter overlap, batches of point-to-point sends and receives (pipeline stages), and a
// variable-count all-to-all built on them (expert parallelism).
// Implementations: nccl_communicator.h (one process per rank, NCCL) and device_thread_communicator.h (N
// ranks as threads on one GPU, for tests). Leaves out NCCL groups of collectives (an
// FSDP unit is one flat buffer: one collective), averaging (the caller scales), fp16/fp8 and CUDA-graph
// capture.
//
// Stream contract (every implementation):
// - A collective is enqueued on `stream` and is asynchronous with respect to the host: the call returns
//   without waiting for the GPU. It may block the host until the operation is enqueued (NCCL: a
//   non-blocking communicator still in progress; the thread communicator: until every rank of the group
//   made the same call), never until it completes.
// - `in` must be ready in `stream` order: work that produced it on another stream is ordered first with
//   cudaEventRecord(producer) + cudaStreamWaitEvent(stream) (llm.c zero.cuh). `out` is valid for work
//   enqueued later on `stream`, or on streams that wait on an event recorded on `stream` after the call.
//   Until then `in` must not be written, `out` not touched, and neither freed.
// - Every rank calls the same collectives, with the same counts, in the same order on each communicator
//   and across the communicators of one family; otherwise NCCL hangs (the watchdog then aborts) and the
//   thread communicator aborts with "mismatched collectives" or a timeout.
// - One communicator runs its collectives one after the other (NCCL: one internal stream per
//   communicator: NVIDIA/nccl src/enqueue.cc makes every launch wait on the communicator's device
//   stream), whatever streams they are issued on. To overlap an all-gather
//   with a reduce-scatter, issue them on two communicators: dup().
// - Buffers of different ranks never overlap; "in place" means exactly the aliasing stated per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/collective.h"
#include "core/dtype.h"
#include "executor/comm/communicator.h"  // CommAborted

namespace fsdpx::cuda {

// The words the device communicators move are fsdpx::DType (core/dtype.h) fp32, or bf16 (also the 2-byte
// word in which f16 buffers are copied); submit and send_recv refuse the other formats.
constexpr bool is_comm_word(DType t) { return t == DType::fp32 || t == DType::bf16; }
constexpr std::size_t word_bytes(DType t) { return t == DType::bf16 ? 2 : 4; }
constexpr const char* word_name(DType t) { return t == DType::bf16 ? "bf16" : "f32"; }

// The collectives are fsdpx::Collective (core/collective.h): all_gather, reduce_scatter, all_reduce and
// broadcast here (send_recv through send_recv below), named by collective_name in the watchdog's messages.

// One collective as an implementation receives it, after DeviceCommunicator checked its arguments.
struct CollectiveCall {
  Collective kind = Collective::all_reduce;
  const void* in = nullptr;
  void* out = nullptr;
  std::int64_t count = 0;  // elements: per-rank chunk (all_gather, reduce_scatter) or whole buffer
  DType type = DType::fp32;
  int root = 0;  // broadcast only
  cudaStream_t stream = nullptr;
  std::string_view op;  // step-program op name for messages ("ag.u3.mb0.fwd"); may be empty
};

// One transfer of a point-to-point batch: `count` elements of `buf` to `peer` (send) or from it (recv).
struct P2PCall {
  bool send = true;
  void* buf = nullptr;  // read by a send, written by a receive
  std::int64_t count = 0;
  int peer = 0;
};

class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The process group, for messages: "world", "dp_shard", "dp_replicate", "tp".
  virtual const std::string& name() const = 0;

  // in [count] -> out [size*count]; rank r's `in` lands at out + r*count.
  // In place when in == out + rank*count (ncclAllGather's convention).
  void all_gather(const void* in, void* out, std::int64_t count, DType t, cudaStream_t stream,
                  std::string_view op = {}) {
    submit({Collective::all_gather, in, out, count, t, 0, stream, op});
  }
  // in [size*count] -> out [count] = sum over ranks of chunk `rank` of their `in`.
  // In place when out == in + rank*count (ncclReduceScatter's convention).
  void reduce_scatter(const void* in, void* out, std::int64_t count, DType t, cudaStream_t stream,
                      std::string_view op = {}) {
    submit({Collective::reduce_scatter, in, out, count, t, 0, stream, op});
  }
  // in [count] -> out [count] = sum over ranks; every rank gets the same bits. In place when in == out.
  void all_reduce(const void* in, void* out, std::int64_t count, DType t, cudaStream_t stream,
                  std::string_view op = {}) {
    submit({Collective::all_reduce, in, out, count, t, 0, stream, op});
  }
  // out [count] <- root's in [count]; `in` is read on the root only (may be null elsewhere).
  // In place when in == out.
  void broadcast(const void* in, void* out, std::int64_t count, DType t, int root, cudaStream_t stream,
                 std::string_view op = {}) {
    submit({Collective::broadcast, in, out, count, t, root, stream, op});
  }
  // Point to point (pipeline stages): the batch's sends and receives are issued together (NCCL:
  // ncclGroupStart, ncclSend / ncclRecv, ncclGroupEnd, as Megatron-LM's batch_isend_irecv), on `stream`,
  // so none of them waits for another: two stages that send to and receive from each other in one batch
  // cannot deadlock. A send pairs with the peer's receive of the same count in issue order per peer on
  // this communicator (NCCL has no tags): keep one order per peer, or a communicator per direction.
  void send_recv(const std::vector<P2PCall>& calls, DType t, cudaStream_t stream, std::string_view op = {});
  // Variable-count all-to-all (expert parallelism's dispatch and combine), as NCCL builds one (nccl-tests
  // src/alltoall.cu: ncclSend/ncclRecv to every peer in one group): send_counts[p] elements of `in` to
  // rank p and recv_counts[p] from it into `out`, chunks back to back in rank order; this rank's own chunk
  // is a device copy on `stream`. One send_recv batch, so it shares send_recv's pairing rule: every rank
  // issues its all-to-alls on this communicator in the same order. recv_counts[p] must be rank p's
  // send_counts[rank()]; empty chunks are neither sent nor received.
  void all_to_allv(const void* in, const std::vector<std::int64_t>& send_counts, void* out,
                   const std::vector<std::int64_t>& recv_counts, DType t, cudaStream_t stream,
                   std::string_view op = {});

  // Sums: NCCL reduces in its algorithm's order and in the data type (bf16 rounds at every step), so
  // results depend on the topology; the thread communicator sums in rank order 0..n-1 in fp32 and
  // rounds once, bit-identical across ranks and runs. Reduce gradients in f32 when that matters.

  // Collective over this communicator: ranks with the same color (>= 0) form a new communicator,
  // ordered by (key, rank), as ncclCommSplit. It joins this communicator's family (see abort).
  virtual std::unique_ptr<DeviceCommunicator> split(int color, int key, const std::string& name) = 0;
  // Collective: a second communicator over the same ranks (split with one color), so that collectives
  // on the two run concurrently (all-gather of unit i+1 while reduce-scattering unit i).
  virtual std::unique_ptr<DeviceCommunicator> dup(const std::string& name) = 0;

  // Marks the family (the root communicator and everything split or dup'ed from it, transitively) failed
  // and aborts all of its communicators; safe from any thread, more than once (the first message wins).
  // Afterwards every collective and split throws CommAborted("collective aborted: <msg>"), and the
  // outputs of collectives enqueued before are undefined (NCCL kernels are cut short).
  virtual void abort(const std::string& msg) = 0;
  virtual bool aborted() const = 0;
  virtual std::string abort_message() const = 0;  // "" before an abort
  // For the runtime after it waited on a stream: results are garbage if the family was aborted.
  void throw_if_aborted() const {
    if (aborted()) throw CommAborted("collective aborted: " + abort_message());
  }

 protected:
  virtual void enqueue(const CollectiveCall& c) = 0;
  virtual void enqueue_p2p(const std::vector<P2PCall>& calls, DType t, cudaStream_t stream, std::string_view op) = 0;

 private:
  // Throws CommAborted after an abort; checks counts, pointers and root (FSDP_CHECK), then enqueues.
  void submit(const CollectiveCall& c);
};

}  // namespace fsdpx::cuda
