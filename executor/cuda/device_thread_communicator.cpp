// executor/cuda/device_thread_communicator.cpp — the seven steps of the header per collective. The host
// side (rendezvous, mismatch checks, abort, timeout, split) is ThreadGroup's; this file adds the events,
// the stream waits and the device reads. Scratch memory (in-place all-reduce) is stream-ordered
// (cudaMallocAsync/cudaFreeAsync on the caller's stream), so it needs no lifetime bookkeeping.
#include "executor/cuda/device_thread_communicator.h"

#include <array>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/rank_sum.h"

namespace fsdpx::cuda {

struct DeviceThreadCommunicator::Events {
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
  Events() {
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  }
  ~Events() {
    CUDA_CHECK_NOEXCEPT(cudaEventDestroy(ready));
    CUDA_CHECK_NOEXCEPT(cudaEventDestroy(done));
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

namespace {

// Op codes of the shared ThreadGroup (distinct from the host communicator's 1..6): one per collective
// and dtype, so a bf16/f32 mismatch between ranks is caught like a count mismatch.
int op_code(Collective k, DType t) { return 100 + 2 * static_cast<int>(k) + (t == DType::bf16 ? 1 : 0); }

// "all_gather(f32)", ...: the collective's shared name with the dtype, built once.
const char* op_what(Collective k, DType t) {
  static const auto kNames = [] {
    std::array<std::array<std::string, 2>, kCollectiveCount> n;
    for (int c = 0; c < kCollectiveCount; ++c)
      for (DType d : {DType::fp32, DType::bf16})
        n[std::size_t(c)][d == DType::bf16 ? 1 : 0] = fmt::format("{}({})", collective_name(Collective(c)), word_name(d));
    return n;
  }();
  return kNames[static_cast<std::size_t>(k)][t == DType::bf16 ? 1 : 0].c_str();
}

void copy_async(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

// out [count] = rank-order sum of the peers' inputs at [offset, offset + count).
void sum_peers(DType t, void* out, const std::vector<ThreadSlot>& peers, std::int64_t offset, std::int64_t count,
               cudaStream_t stream) {
  RankInputs in;
  in.n = static_cast<int>(peers.size());
  for (std::size_t j = 0; j < peers.size(); ++j) in.ptr[j] = peers[j].in;
  if (t == DType::fp32)
    sum_in_rank_order(static_cast<float*>(out), in, offset, count, stream);
  else
    sum_in_rank_order(static_cast<bf16*>(out), in, offset, count, stream);
}

}  // namespace

DeviceThreadCommunicator::DeviceThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank, int device,
                                                   std::string name)
    : group_(std::move(group)), rank_(rank), device_(device), name_(std::move(name)) {
  FSDP_CHECK(rank >= 0 && rank < group_->size(), "DeviceThreadCommunicator: rank out of range");
  FSDP_CHECK(group_->size() <= kMaxRankSumInputs, "DeviceThreadCommunicator: at most 64 ranks");
  CUDA_CHECK(cudaSetDevice(device_));
  events_ = std::make_shared<Events>();
}

void DeviceThreadCommunicator::enqueue(const CollectiveCall& c) {
  CUDA_CHECK(cudaSetDevice(device_));
  ThreadSlot s;
  s.op = op_code(c.kind, c.type);
  s.what = op_what(c.kind, c.type);
  s.count = c.count;
  s.root = c.root;
  s.in = c.in;
  s.out = c.out;
  s.aux = &events_;
  CUDA_CHECK(cudaEventRecord(events_->ready, c.stream));  // 1
  group_->exchange(rank_, s);                             // 2: rendezvous A
  // The slots stay put until rendezvous B; the events are shared so that they outlive a peer that ends
  // (and destroys its communicator) before this rank's waits of step 6 are enqueued.
  const std::vector<ThreadSlot> peers = group_->slots();
  std::vector<std::shared_ptr<Events>> peer_events;
  for (const ThreadSlot& p : peers) peer_events.push_back(*static_cast<const std::shared_ptr<Events>*>(p.aux));
  for (int j = 0; j < size(); ++j)  // 3
    if (j != rank_) CUDA_CHECK(cudaStreamWaitEvent(c.stream, peer_events[static_cast<std::size_t>(j)]->ready, 0));
  const std::size_t bytes = word_bytes(c.type) * static_cast<std::size_t>(c.count);
  void* scratch = nullptr;  // in-place all-reduce: peers still read `in` while this rank sums
  if (c.kind == Collective::all_reduce && c.in == c.out && bytes > 0)
    CUDA_CHECK(cudaMallocAsync(&scratch, bytes, c.stream));
  enqueue_reads(c, peers, scratch ? scratch : c.out);
  CUDA_CHECK(cudaEventRecord(events_->done, c.stream));  // 4
  try {
    group_->arrive(rank_, s.what);  // 5: rendezvous B
  } catch (...) {
    if (scratch) CUDA_CHECK(cudaFreeAsync(scratch, c.stream));
    throw;
  }
  for (int j = 0; j < size(); ++j)  // 6
    if (j != rank_) CUDA_CHECK(cudaStreamWaitEvent(c.stream, peer_events[static_cast<std::size_t>(j)]->done, 0));
  if (scratch) {  // 7
    copy_async(c.out, scratch, bytes, c.stream);
    CUDA_CHECK(cudaFreeAsync(scratch, c.stream));
  }
}

void DeviceThreadCommunicator::enqueue_reads(const CollectiveCall& c, const std::vector<ThreadSlot>& peers,
                                             void* sum_out) {
  const std::size_t bytes = word_bytes(c.type) * static_cast<std::size_t>(c.count);
  switch (c.kind) {
    case Collective::all_gather:  // in place: rank r's own chunk is already at out + r*count
      for (std::size_t j = 0; j < peers.size(); ++j)
        copy_async(static_cast<char*>(c.out) + bytes * j, peers[j].in, bytes, c.stream);
      break;
    case Collective::reduce_scatter:  // in place is safe: peers read other chunks of this rank's input
      sum_peers(c.type, c.out, peers, c.count * rank_, c.count, c.stream);
      break;
    case Collective::all_reduce:
      sum_peers(c.type, sum_out, peers, 0, c.count, c.stream);
      break;
    case Collective::broadcast:
      copy_async(c.out, peers[static_cast<std::size_t>(c.root)].in, bytes, c.stream);
      break;
    case Collective::send_recv:  // never submitted (enqueue_p2p)
    case Collective::all_to_all: break;  // rejected by DeviceCommunicator::submit
  }
}

namespace {

// What a send posts to the receiver's mailbox (as f64 words of the host ThreadGroup): the stream-ordered
// staging copy of the message and the event after which it is complete. The receiver frees both.
struct P2PLetter {
  void* staging = nullptr;
  cudaEvent_t staged = nullptr;
  std::int64_t count = 0;
  std::int64_t type = 0;  // DType
};
constexpr std::int64_t kLetterWords = sizeof(P2PLetter) / sizeof(double);
static_assert(sizeof(P2PLetter) % sizeof(double) == 0);
constexpr int kP2PTag = 0;  // one mailbox per (sender, receiver): messages pair in issue order, as NCCL's

std::uint64_t post_send(ThreadGroup& g, int rank, const P2PCall& c, DType t, cudaStream_t stream) {
  P2PLetter l;
  l.count = c.count;
  l.type = static_cast<std::int64_t>(t);
  const std::size_t bytes = word_bytes(t) * static_cast<std::size_t>(c.count);
  if (bytes > 0) {
    CUDA_CHECK(cudaMallocAsync(&l.staging, bytes, stream));
    copy_async(l.staging, c.buf, bytes, stream);
  }
  CUDA_CHECK(cudaEventCreateWithFlags(&l.staged, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(l.staged, stream));
  return g.post(rank, c.peer, kP2PTag, ElemType::f64, &l, kLetterWords);
}

void take_recv(ThreadGroup& g, int rank, const P2PCall& c, DType t, cudaStream_t stream) {
  P2PLetter l;
  g.take(c.peer, rank, kP2PTag, ElemType::f64, &l, kLetterWords);
  CUDA_CHECK(cudaStreamWaitEvent(stream, l.staged, 0));
  CUDA_CHECK(cudaEventDestroy(l.staged));  // released once the wait's record completes
  const bool match = l.count == c.count && l.type == static_cast<std::int64_t>(t);
  if (match) copy_async(c.buf, l.staging, word_bytes(t) * static_cast<std::size_t>(c.count), stream);
  if (l.staging) CUDA_CHECK(cudaFreeAsync(l.staging, stream));
  if (match) return;
  const std::string msg = fmt::format("rank {}: mismatched send_recv: rank {} sent {} elements of {}, the receive "
                                      "expects {} of {}", rank, c.peer, l.count, word_name(DType(l.type)), c.count,
                                      word_name(t));
  g.family()->fail(msg);
}

}  // namespace

DeviceThreadCommunicator::~DeviceThreadCommunicator() {
  for (const std::vector<char>& bytes : group_->drain(rank_, kP2PTag)) {
    P2PLetter l;
    if (bytes.size() != sizeof l) continue;
    std::memcpy(&l, bytes.data(), sizeof l);
    CUDA_CHECK_NOEXCEPT(cudaEventSynchronize(l.staged));  // the staging copy may still be in flight
    CUDA_CHECK_NOEXCEPT(cudaEventDestroy(l.staged));
    if (l.staging) CUDA_CHECK_NOEXCEPT(cudaFree(l.staging));
  }
}

// The batch's sends are posted first (a post never waits), then its receives are taken in order, so two
// ranks that send to and receive from each other in one batch cannot deadlock, as in an NCCL group. In
// rendezvous mode the call then waits until every send of the batch was taken (an NCCL group completes
// when all its operations matched): a program whose batches wait on each other in a cycle times out.
// The wait is on the host, in program order: a model of NCCL's stream-side wait for ranks whose
// point-to-point operations run in program order on one stream.
void DeviceThreadCommunicator::enqueue_p2p(const std::vector<P2PCall>& calls, DType t, cudaStream_t stream,
                                           std::string_view) {
  CUDA_CHECK(cudaSetDevice(device_));
  std::vector<std::pair<int, std::uint64_t>> sent;  // (peer, sequence number)
  for (const P2PCall& c : calls)
    if (c.send) sent.emplace_back(c.peer, post_send(*group_, rank_, c, t, stream));
  for (const P2PCall& c : calls)
    if (!c.send) take_recv(*group_, rank_, c, t, stream);
  if (group_->p2p_mode() == P2PMode::rendezvous)
    for (const auto& [peer, seq] : sent) group_->wait_taken(rank_, peer, kP2PTag, seq);
}

std::unique_ptr<DeviceCommunicator> DeviceThreadCommunicator::split(int color, int key, const std::string& name) {
  throw_if_aborted();
  auto [child, new_rank] = group_->split(rank_, color, key);
  return std::make_unique<DeviceThreadCommunicator>(std::move(child), new_rank, device_, name);
}

std::vector<std::unique_ptr<DeviceCommunicator>> make_device_thread_communicators(int size, int device,
                                                                                 const std::string& name,
                                                                                 double timeout_s, P2PMode p2p) {
  auto group = ThreadGroup::create(size, timeout_s, nullptr, p2p);
  std::vector<std::unique_ptr<DeviceCommunicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_unique<DeviceThreadCommunicator>(group, r, device, name));
  return comms;
}

}  // namespace fsdpx::cuda
