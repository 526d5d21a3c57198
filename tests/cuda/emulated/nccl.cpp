// tests/cuda/emulated/nccl.cpp — a one-rank NCCL on the emulated runtime that enforces the rules of
// non-blocking communicators: a call on a communicator still ncclInProgress (other than
// ncclCommGetAsyncError/ncclCommAbort), on a destroyed or aborted one, or concurrent with another call on
// it, aborts the test. Init, split, finalize and every collective stay in progress for a few polls.
// Collectives are copies (one rank); sends and receives to itself must sit in one ncclGroupStart/End
// (alone they would deadlock), where each receive takes the oldest send. Checks NcclCommunicator's call
// discipline, not NCCL itself.
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

struct ncclComm {
  int rank = 0, nranks = 1;
  int polls_left = 0;
  ncclResult_t state = ncclSuccess;
  bool dead = false;
  std::atomic<int> in_call{0};
};

namespace {
void die(const char* what) {
  std::fprintf(stderr, "FAKE NCCL: %s\n", what);
  std::abort();
}
struct Enter {
  ncclComm* c;
  Enter(ncclComm* comm, bool must_be_ready) : c(comm) {
    if (c == nullptr) die("null communicator");
    if (c->in_call.fetch_add(1) != 0) die("concurrent calls on one communicator");
    if (c->dead) die("call on a destroyed or aborted communicator");
    if (must_be_ready && c->state == ncclInProgress) die("call while the communicator is ncclInProgress");
  }
  ~Enter() { c->in_call.fetch_sub(1); }
};
// Communicators are never freed before exit, so that a use after destroy/abort is caught (and not a leak).
ncclComm* new_comm() {
  static std::mutex mu;
  static std::vector<std::unique_ptr<ncclComm>> all;
  std::lock_guard<std::mutex> lock(mu);
  all.push_back(std::make_unique<ncclComm>());
  return all.back().get();
}
ncclResult_t in_progress(ncclComm* c, int polls) {
  c->state = ncclInProgress;
  c->polls_left = polls;
  return ncclInProgress;
}
ncclResult_t copy(const void* in, void* out, size_t count, ncclDataType_t t, ncclComm* c, cudaStream_t s) {
  Enter e(c, true);
  const size_t bytes = count * (t == ncclBfloat16 ? 2 : 4);
  if (in != out && bytes > 0 && cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
    return ncclUnhandledCudaError;
  return in_progress(c, 2);
}
// Point to point of the current group (one rank: every peer is itself).
struct PendingSend {
  const void* buf;
  size_t bytes;
};
struct PendingRecv {
  void* buf;
  size_t bytes;
  ncclComm* comm;
  cudaStream_t stream;
};
thread_local int group_depth = 0;
thread_local std::vector<PendingSend> group_sends;
thread_local std::vector<PendingRecv> group_recvs;
size_t bytes_of(size_t count, ncclDataType_t t) { return count * (t == ncclBfloat16 ? 2 : 4); }
}  // namespace

extern "C" {
ncclResult_t ncclGetVersion(int* v) { *v = 22809; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) { std::memset(id, 0, sizeof(*id)); return ncclSuccess; }
const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake error"; }
const char* ncclGetLastError(ncclComm_t) { return ""; }
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t* config) {
  if (nranks != 1 || rank != 0) die("one rank only");
  if (config == nullptr || config->blocking != 0) die("expected a non-blocking config");
  *comm = new_comm();
  return in_progress(*comm, 3);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* r) {
  Enter e(c, false);
  if (c->state == ncclInProgress && --c->polls_left <= 0) c->state = ncclSuccess;
  *r = c->state;
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t c, int, int, ncclComm_t* child, ncclConfig_t* config) {
  Enter e(c, true);
  if (config == nullptr || config->blocking != 0) die("expected a non-blocking config");
  *child = new_comm();
  in_progress(*child, 3);
  return in_progress(c, 2);
}
ncclResult_t ncclCommUserRank(const ncclComm_t c, int* r) { Enter e(c, true); *r = c->rank; return ncclSuccess; }
ncclResult_t ncclCommCount(const ncclComm_t c, int* n) { Enter e(c, true); *n = c->nranks; return ncclSuccess; }
ncclResult_t ncclCommFinalize(ncclComm_t c) { Enter e(c, true); return in_progress(c, 2); }
ncclResult_t ncclCommDestroy(ncclComm_t c) {
  Enter e(c, true);
  c->dead = true;  // kept until exit: a later use is caught above
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t c) {
  Enter e(c, false);
  c->dead = true;
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void* in, void* out, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t s) {
  return copy(in, out, n, t, c, s);
}
ncclResult_t ncclReduceScatter(const void* in, void* out, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                               cudaStream_t s) {
  return copy(in, out, n, t, c, s);
}
ncclResult_t ncclAllReduce(const void* in, void* out, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                           cudaStream_t s) {
  return copy(in, out, n, t, c, s);
}
ncclResult_t ncclBroadcast(const void* in, void* out, size_t n, ncclDataType_t t, int, ncclComm_t c, cudaStream_t s) {
  return copy(in, out, n, t, c, s);
}
ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t) {
  Enter e(c, true);
  if (group_depth == 0 || peer != 0) die("a send to itself outside a group");
  group_sends.push_back({buf, bytes_of(n, t)});
  return ncclSuccess;
}
ncclResult_t ncclRecv(void* buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
  Enter e(c, true);
  if (group_depth == 0 || peer != 0) die("a receive from itself outside a group");
  group_recvs.push_back({buf, bytes_of(n, t), c, s});
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) die("ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  if (group_sends.size() != group_recvs.size()) die("sends and receives of a group do not pair");
  ncclResult_t r = ncclSuccess;
  for (size_t i = 0; i < group_recvs.size(); ++i) {
    const PendingSend& from = group_sends[i];
    const PendingRecv& to = group_recvs[i];
    if (from.bytes != to.bytes) die("a receive of another size than its send");
    if (to.bytes > 0 && cudaMemcpyAsync(to.buf, from.buf, to.bytes, cudaMemcpyDeviceToDevice, to.stream) != cudaSuccess)
      return ncclUnhandledCudaError;
    r = in_progress(to.comm, 2);
  }
  group_sends.clear();
  group_recvs.clear();
  return r;
}
}  // extern "C"
