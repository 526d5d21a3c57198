// executor/cuda/nccl_communicator.cpp — NcclCommunicator: NCCL calls on the family's handles
// (nccl_family.h), each completed by polling ncclInProgress and watched by the family's watchdog; the
// factories and version helpers. Errors that a peer or the network can cause abort the family and throw
// CommAborted; misuse is FSDP_CHECK, CUDA errors CUDA_CHECK (style.md, Errors).
#include "executor/cuda/nccl_communicator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nccl.h>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/nccl_family.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL communicator needs NCCL >= 2.18 (ncclCommSplit, non-blocking communicators)"
#endif

namespace fsdpx::cuda {
namespace {

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<NcclId>, "NcclId must hold an ncclUniqueId");

ncclDataType_t nccl_type(DType t) { return t == DType::bf16 ? ncclBfloat16 : ncclFloat32; }

struct CudaEvent {
  cudaEvent_t event = nullptr;
  CudaEvent() { CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~CudaEvent() { CUDA_CHECK_NOEXCEPT(cudaEventDestroy(event)); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
};

class NcclCommunicator final : public DeviceCommunicator {
 public:
  NcclCommunicator(std::shared_ptr<NcclFamily> family, std::shared_ptr<NcclHandle> handle, int rank, int size)
      : family_(std::move(family)), handle_(std::move(handle)), rank_(rank), size_(size),
        device_(family_->options().device) {}
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return handle_->name; }
  std::unique_ptr<DeviceCommunicator> split(int color, int key, const std::string& name) override;
  std::unique_ptr<DeviceCommunicator> dup(const std::string& name) override { return split(0, rank_, name); }
  void abort(const std::string& msg) override { family_->abort(msg); }
  bool aborted() const override { return family_->aborted(); }
  std::string abort_message() const override { return family_->message(); }

  // Waits until `h` (this communicator, or a child being split from it) is ready after an NCCL call that
  // returned `r`; on an error or init_timeout_s aborts the family and throws CommAborted naming `what`.
  void complete(NcclHandle& h, ncclResult_t r, const std::string& what);
  // Polls this (the parent) until NCCL has stored the split child's handle in `child`.
  void await_child(NcclHandle& child, const std::string& what);

 protected:
  void enqueue(const CollectiveCall& c) override;
  void enqueue_p2p(const std::vector<P2PCall>& calls, DType type, cudaStream_t stream, std::string_view op) override;

 private:
  [[noreturn]] void fail(const std::string& msg);
  // f(h.comm) under h's mutex, as every NCCL call on a communicator that the family may abort meanwhile
  // (abort_locked nulls comm under it); CommAborted when it was aborted already.
  template <class F>
  auto call_locked(NcclHandle& h, F&& f) const {
    std::lock_guard<std::mutex> lock(*h.mu);
    if (h.comm == nullptr) throw CommAborted("collective aborted: " + family_->message());
    return f(h.comm);
  }
  ncclResult_t issue(const CollectiveCall& c, ncclComm_t comm) const;
  void watch(const CollectiveCall& c);

  std::shared_ptr<NcclFamily> family_;
  std::shared_ptr<NcclHandle> handle_;
  int rank_, size_, device_;
};

void NcclCommunicator::fail(const std::string& msg) {
  family_->abort(msg);
  throw CommAborted("collective aborted: " + family_->message());  // the first message of the family
}

void NcclCommunicator::complete(NcclHandle& h, ncclResult_t r, const std::string& what) {
  const double timeout_s = family_->options().init_timeout_s;
  const WaitResult w = wait_ready(h, r, timeout_s);
  const int rank = family_->world_rank();
  switch (w.state) {
    case Ready::ok: return;
    case Ready::gone:
      throw_if_aborted();
      fail(fmt::format("rank {}: {} on {}: NCCL returned no communicator; aborting the communicators", rank, what,
                       name()));
    case Ready::timeout:
      fail(fmt::format("rank {}: {} on {} did not complete within {:g} s; aborting the communicators", rank, what,
                       name(), timeout_s));
    case Ready::error:
      fail(fmt::format("rank {}: {} on {} failed: {}; aborting the communicators", rank, what, name(), w.error));
  }
}

// NCCL stores the child's handle (ncclCommSplit's *newcomm, NULL until then) when the split's job completes,
// and a poll of the parent joins that job (NVIDIA/nccl src/init.cc ncclCommInitChildComm,
// ncclCommGetAsyncError). A split that returned ncclSuccess can leave it NULL until that poll (NCCL 2.28.9 on
// an H200, 2026-11-30), so the parent is polled until the handle is there, within init_timeout_s.
void NcclCommunicator::await_child(NcclHandle& child, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const double timeout_s = family_->options().init_timeout_s;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (int polls = 0; __atomic_load_n(&child.comm, __ATOMIC_ACQUIRE) == nullptr; ++polls) {
    throw_if_aborted();
    if (Clock::now() > deadline)
      fail(fmt::format("rank {}: {} on {}: NCCL handed over no communicator within {:g} s; aborting the communicators",
                       family_->world_rank(), what, name(), timeout_s));
    if (polls >= 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    else if (polls > 0)
      std::this_thread::yield();
    ncclResult_t async = ncclSuccess;
    const ncclResult_t q = call_locked(*handle_, [&](ncclComm_t comm) { return ncclCommGetAsyncError(comm, &async); });
    if (q != ncclSuccess) async = q;
    if (async != ncclSuccess && async != ncclInProgress)
      fail(fmt::format("rank {}: {} on {} failed: {}; aborting the communicators", family_->world_rank(), what, name(),
                       ncclGetErrorString(async)));
  }
}

ncclResult_t NcclCommunicator::issue(const CollectiveCall& c, ncclComm_t comm) const {
  const auto n = static_cast<std::size_t>(c.count);
  const ncclDataType_t t = nccl_type(c.type);
  switch (c.kind) {
    case Collective::all_gather: return ncclAllGather(c.in, c.out, n, t, comm, c.stream);
    case Collective::reduce_scatter: return ncclReduceScatter(c.in, c.out, n, t, ncclSum, comm, c.stream);
    case Collective::all_reduce: return ncclAllReduce(c.in, c.out, n, t, ncclSum, comm, c.stream);
    case Collective::broadcast:  // sendbuff is read on the root only
      return ncclBroadcast(c.in != nullptr ? c.in : c.out, c.out, n, t, c.root, comm, c.stream);
    case Collective::send_recv:  // enqueue_p2p
    case Collective::all_to_all: break;  // rejected by DeviceCommunicator::submit
  }
  return ncclInvalidArgument;
}

// One NCCL group: the sends and receives progress together (NCCL user guide, "Group Calls" and
// "Point-to-point communication"). ncclGroupEnd may report ncclInProgress on a non-blocking
// communicator; complete() polls it like any call.
void NcclCommunicator::enqueue_p2p(const std::vector<P2PCall>& calls, DType type, cudaStream_t stream,
                                   std::string_view op) {
  CUDA_CHECK(cudaSetDevice(device_));
  const ncclDataType_t t = nccl_type(type);
  const ncclResult_t r = call_locked(*handle_, [&](ncclComm_t comm) {
    ncclResult_t first = ncclGroupStart();
    for (const P2PCall& c : calls) {
      if (first != ncclSuccess) break;
      const auto n = static_cast<std::size_t>(c.count);
      first = c.send ? ncclSend(c.buf, n, t, c.peer, comm, stream) : ncclRecv(c.buf, n, t, c.peer, comm, stream);
    }
    const ncclResult_t end = ncclGroupEnd();
    return first == ncclSuccess ? end : first;
  });
  complete(*handle_, r, op.empty() ? std::string("send_recv") : fmt::format("send_recv {}", op));
  CollectiveCall c;
  c.kind = Collective::send_recv;
  c.stream = stream;
  c.op = op;
  watch(c);
}

void NcclCommunicator::enqueue(const CollectiveCall& c) {
  CUDA_CHECK(cudaSetDevice(device_));
  const ncclResult_t r = call_locked(*handle_, [&](ncclComm_t comm) { return issue(c, comm); });
  complete(*handle_, r, c.op.empty() ? collective_name(c.kind) : fmt::format("{} {}", collective_name(c.kind), c.op));
  watch(c);
}

// After the collective is enqueued (ncclSuccess): an event behind it on the same stream completes when
// it does; the watchdog polls that event and the communicator's asynchronous error.
void NcclCommunicator::watch(const CollectiveCall& c) {
  Watchdog* wd = family_->watchdog();
  if (wd == nullptr) return;
  auto ev = std::make_shared<CudaEvent>();
  CUDA_CHECK(cudaEventRecord(ev->event, c.stream));
  WatchedCollective w;
  w.rank = family_->world_rank();
  w.group = name();
  w.collective = collective_name(c.kind);
  w.op = std::string(c.op);
  w.poll = [h = handle_, ev, device = device_] { return poll_collective(*h, ev->event, device); };
  wd->watch(std::move(w));
}

std::unique_ptr<DeviceCommunicator> NcclCommunicator::split(int color, int key, const std::string& name) {
  throw_if_aborted();
  FSDP_CHECK(color >= 0, "split: color must be non-negative");
  CUDA_CHECK(cudaSetDevice(device_));
  auto child = family_->make_handle(name);
  ncclConfig_t config = nonblocking_config(child->name);
  const ncclResult_t r =
      call_locked(*handle_, [&](ncclComm_t comm) { return ncclCommSplit(comm, color, key, &child->comm, &config); });
  family_->add(child);  // from here on an abort of the family reaches the child too
  const std::string what = fmt::format("split (color {}, key {}) into {}", color, key, name);
  complete(*handle_, r, what);             // NCCL's example polls the parent ...
  await_child(*child, what);               // ... which hands over the child's handle ...
  complete(*child, ncclInProgress, what);  // ... and the child must be ready before its first use
  int child_rank = 0, child_size = 0;
  ncclResult_t r_rank = ncclSuccess, r_size = ncclSuccess;
  call_locked(*child, [&](ncclComm_t comm) {
    r_rank = ncclCommUserRank(comm, &child_rank);
    r_size = ncclCommCount(comm, &child_size);
  });
  if (r_rank != ncclSuccess || r_size != ncclSuccess)
    fail(fmt::format("rank {}: {} on {}: ncclCommUserRank/ncclCommCount failed: {}; aborting the communicators",
                     family_->world_rank(), what, this->name(), ncclGetErrorString(r_rank != ncclSuccess ? r_rank : r_size)));
  return std::make_unique<NcclCommunicator>(family_, std::move(child), child_rank, child_size);
}

// Not aborted: ncclCommFinalize (flushes this rank's work and synchronises with the peers, polled like
// any non-blocking call, bounded by init_timeout_s), then ncclCommDestroy; on an error or timeout, or
// when the family was aborted, ncclCommAbort.
NcclCommunicator::~NcclCommunicator() {
  ncclResult_t r = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(*handle_->mu);
    if (handle_->comm == nullptr) return;
    if (family_->aborted()) {
      abort_locked(*handle_);
      return;
    }
    CUDA_CHECK_NOEXCEPT(cudaSetDevice(device_));
    r = ncclCommFinalize(handle_->comm);
  }
  const WaitResult w = wait_ready(*handle_, r, family_->options().init_timeout_s);
  std::lock_guard<std::mutex> lock(*handle_->mu);
  if (handle_->comm == nullptr) return;  // aborted meanwhile
  if (w.state != Ready::ok) {
    std::fprintf(stderr, "[fsdpx] rank %d: finalizing %s: %s; aborting it\n", family_->world_rank(),
                 handle_->name.c_str(), w.state == Ready::timeout ? "timed out" : w.error.c_str());
    abort_locked(*handle_);
    return;
  }
  r = ncclCommDestroy(handle_->comm);
  if (r != ncclSuccess)
    std::fprintf(stderr, "[fsdpx] ncclCommDestroy(%s): %s\n", handle_->name.c_str(), ncclGetErrorString(r));
  handle_->comm = nullptr;
}

}  // namespace

NcclId nccl_unique_id() {
  ncclUniqueId uid;
  NCCL_CHECK(ncclGetUniqueId(&uid));
  NcclId id;
  std::memcpy(id.data(), uid.internal, id.size());
  return id;
}

std::unique_ptr<DeviceCommunicator> make_nccl_communicator(const NcclId& id, int nranks, int rank,
                                                           NcclOptions options) {
  FSDP_CHECK(nranks >= 1 && rank >= 0 && rank < nranks, "make_nccl_communicator: rank out of range");
  CUDA_CHECK(cudaSetDevice(options.device));
  auto family = std::make_shared<NcclFamily>(rank, std::move(options));
  auto handle = family->make_handle(family->options().name);
  ncclUniqueId uid;
  std::memcpy(uid.internal, id.data(), id.size());
  ncclConfig_t config = nonblocking_config(handle->name);
  ncclResult_t r = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(*handle->mu);
    r = ncclCommInitRankConfig(&handle->comm, nranks, uid, rank, &config);
  }
  family->add(handle);
  auto comm = std::make_unique<NcclCommunicator>(family, handle, rank, nranks);
  comm->complete(*handle, r, fmt::format("init ({} ranks)", nranks));
  family->start_watchdog();
  return comm;
}

NcclVersion nccl_library_version() {
  int code = 0;
  NCCL_CHECK(ncclGetVersion(&code));
  return decode_nccl_version(code);
}

bool nccl_multi_rank_gpu_allowed() {
  return nccl_allows_multi_rank_gpu(nccl_library_version(), std::getenv(kNcclMultiRankGpuEnv));
}

std::string nccl_describe() {
  const NcclVersion lib = nccl_library_version();
  const bool multi = nccl_allows_multi_rank_gpu(lib, std::getenv(kNcclMultiRankGpuEnv));
  return fmt::format("NCCL {} (built against {}); several ranks per GPU: {}", to_string(lib),
                     to_string(decode_nccl_version(NCCL_VERSION_CODE)),
                     multi ? "yes (experimental)" : "no (needs >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1)");
}

}  // namespace fsdpx::cuda
