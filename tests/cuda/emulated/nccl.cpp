// tests/cuda/emulated/nccl.cpp — NCCL on the emulated runtime, any number of ranks as threads of this
// process, with the rules of non-blocking communicators enforced: a call on a communicator still
// ncclInProgress (other than ncclCommGetAsyncError/ncclCommAbort), on a destroyed or aborted one, or
// concurrent with another call on it, aborts the test. Init and split stay in progress until every rank
// (of the id, of the parent) made the call, and a few polls; collectives and groups for a few polls. The
// work runs on the streams (nccl_clique.h): collectives meet, sends complete when received (rendezvous).
// Checks NcclCommunicator's call discipline and the CUDA backend's message order, not NCCL itself.
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cuda/emulated/emu_stream.h"
#include "tests/cuda/emulated/nccl_clique.h"

using fsdpx::cuda::emu::Clique;
using fsdpx::cuda::emu::CollKind;
using fsdpx::cuda::emu::P2POp;

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0, nranks = 1;
  int polls_left = 0;
  ncclResult_t state = ncclSuccess;
  std::function<bool()> pending;  // besides the polls, what an ncclInProgress waits for (under g_mu)
  bool dead = false;
  std::atomic<int> in_call{0};
  std::uint64_t collectives = 0, splits = 0;
  std::map<int, std::uint64_t> sent, received;  // per peer: the next message's sequence number
  // Split children not yet handed to the caller: NCCL stores *newcomm when the split's job completes, and
  // a later ncclCommGetAsyncError of the parent joins that job (src/init.cc ncclCommInitChildComm,
  // ncclCommGetAsyncError); until then the caller's pointer stays NULL, even after a split that returned
  // ncclSuccess (seen with NCCL 2.28.9 on an H200, 2026-11-30).
  std::vector<std::pair<ncclComm_t*, ncclComm*>> unstored;
};

namespace {
std::mutex g_mu;  // inits and splits in progress

[[noreturn]] void die(const char* what) {
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
ncclResult_t in_progress(ncclComm* c, int polls, std::function<bool()> pending = nullptr) {
  c->state = ncclInProgress;
  c->polls_left = polls;
  c->pending = std::move(pending);
  return ncclInProgress;
}
std::size_t bytes_of(std::size_t count, ncclDataType_t t) { return count * (t == ncclBfloat16 ? 2 : 4); }

// Ranks of one unique id meeting in ncclCommInitRankConfig.
struct InitRound {
  int nranks = 0, joined = 0;
  std::shared_ptr<Clique> clique;
};
std::map<std::string, std::shared_ptr<InitRound>> g_inits;

// The ranks of one ncclCommSplit of a parent: when the last arrives, each color's ranks by (key, rank).
struct SplitRound {
  std::vector<std::tuple<int, int, int, ncclComm*>> entries;  // color, key, parent rank, child
  bool done = false;
};
std::map<std::pair<Clique*, std::uint64_t>, std::shared_ptr<SplitRound>> g_splits;

void form_children(SplitRound& s) {
  std::sort(s.entries.begin(), s.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a)) < std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });
  for (std::size_t i = 0; i < s.entries.size();) {
    std::size_t j = i;
    while (j < s.entries.size() && std::get<0>(s.entries[j]) == std::get<0>(s.entries[i])) ++j;
    auto clique = std::make_shared<Clique>(int(j - i));
    for (std::size_t k = i; k < j; ++k) {
      ncclComm* child = std::get<3>(s.entries[k]);
      child->clique = clique, child->rank = int(k - i), child->nranks = int(j - i);
    }
    i = j;
  }
  s.done = true;
}

ncclResult_t collective(CollKind kind, const void* in, void* out, size_t n, ncclDataType_t t, int root, ncclComm* c,
                        cudaStream_t s) {
  Enter e(c, true);
  const std::uint64_t seq = c->collectives++;
  fsdpx::cuda::emu::enqueue(s, [clique = c->clique, rank = c->rank, kind, in, out, n, t, root, seq] {
    clique->collective(seq, rank, kind, in, out, n, t, root);
  });
  return in_progress(c, 2);
}

// Point to point of the current group, per communicator and stream.
struct PendingP2P {
  ncclComm* comm;
  cudaStream_t stream;
  P2POp op;
};
thread_local int group_depth = 0;
thread_local std::vector<PendingP2P> group_ops;

ncclResult_t flush_group() {
  std::map<std::pair<ncclComm*, cudaStream_t>, std::vector<P2POp>> by_comm;
  for (const PendingP2P& p : group_ops) by_comm[{p.comm, p.stream}].push_back(p.op);
  group_ops.clear();
  ncclResult_t r = ncclSuccess;
  for (auto& [key, ops] : by_comm) {
    fsdpx::cuda::emu::enqueue(key.second, [clique = key.first->clique, rank = key.first->rank, ops = ops] {
      clique->point_to_point(rank, ops);
    });
    r = in_progress(key.first, 2);
  }
  return r;
}

ncclResult_t p2p(bool send, void* buf, size_t n, ncclDataType_t t, int peer, ncclComm* c, cudaStream_t s) {
  {
    Enter e(c, true);
    if (peer < 0 || peer >= c->nranks) die("peer out of range");
    if (group_depth == 0 && peer == c->rank) die("a send or receive to itself outside a group");
    const std::uint64_t seq = send ? c->sent[peer]++ : c->received[peer]++;
    group_ops.push_back({c, s, P2POp{send, peer, seq, buf, bytes_of(n, t)}});
  }
  return group_depth == 0 ? flush_group() : ncclSuccess;  // alone, a call is its own group
}
}  // namespace

extern "C" {
ncclResult_t ncclGetVersion(int* v) { *v = 22809; return ncclSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<unsigned long long> next{1};
  std::memset(id, 0, sizeof(*id));
  const unsigned long long k = next++;
  std::memcpy(id->internal, &k, sizeof k);
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake error"; }
const char* ncclGetLastError(ncclComm_t) { return ""; }
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (config == nullptr || config->blocking != 0) die("expected a non-blocking config");
  if (rank < 0 || rank >= nranks) die("rank out of range");
  *comm = new_comm();
  std::lock_guard<std::mutex> lk(g_mu);
  auto& round = g_inits[std::string(id.internal, sizeof id.internal)];
  if (!round) round = std::make_shared<InitRound>(), round->nranks = nranks, round->clique = std::make_shared<Clique>(nranks);
  if (round->nranks != nranks) die("ranks of one id disagree on nranks");
  (*comm)->clique = round->clique, (*comm)->rank = rank, (*comm)->nranks = nranks;
  ++round->joined;
  return in_progress(*comm, 3, [round] { return round->joined == round->nranks; });
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* r) {
  Enter e(c, false);
  if (c->state == ncclInProgress && --c->polls_left <= 0) {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!c->pending || c->pending()) c->state = ncclSuccess, c->pending = nullptr;
  }
  *r = c->state;
  if (c->state == ncclSuccess) {
    for (auto& [slot, child] : c->unstored) __atomic_store_n(slot, child, __ATOMIC_RELEASE);
    c->unstored.clear();
  }
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t* child, ncclConfig_t* config) {
  Enter e(c, true);
  if (config == nullptr || config->blocking != 0) die("expected a non-blocking config");
  if (color < 0) die("NCCL_SPLIT_NOCOLOR is not emulated");
  ncclComm* made = new_comm();
  *child = nullptr;
  c->unstored.emplace_back(child, made);
  std::lock_guard<std::mutex> lk(g_mu);
  auto& round = g_splits[{c->clique.get(), c->splits++}];
  if (!round) round = std::make_shared<SplitRound>();
  round->entries.emplace_back(color, key, c->rank, made);
  if (int(round->entries.size()) == c->nranks) form_children(*round);
  in_progress(made, 3, [round] { return round->done; });
  if (round->done) return ncclSuccess;  // the last rank: done, but the child is stored at the next poll
  return in_progress(c, 2, [round] { return round->done; });
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
  if (c->clique) c->clique->abort();  // releases this communicator's waits on every rank
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void* in, void* out, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t s) {
  return collective(CollKind::all_gather, in, out, n, t, 0, c, s);
}
ncclResult_t ncclReduceScatter(const void* in, void* out, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                               cudaStream_t s) {
  return collective(CollKind::reduce_scatter, in, out, n, t, 0, c, s);
}
ncclResult_t ncclAllReduce(const void* in, void* out, size_t n, ncclDataType_t t, ncclRedOp_t, ncclComm_t c,
                           cudaStream_t s) {
  return collective(CollKind::all_reduce, in, out, n, t, 0, c, s);
}
ncclResult_t ncclBroadcast(const void* in, void* out, size_t n, ncclDataType_t t, int root, ncclComm_t c,
                           cudaStream_t s) {
  return collective(CollKind::broadcast, in, out, n, t, root, c, s);
}
ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
ncclResult_t ncclSend(const void* buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
  return p2p(true, const_cast<void*>(buf), n, t, peer, c, s);
}
ncclResult_t ncclRecv(void* buf, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
  return p2p(false, buf, n, t, peer, c, s);
}
ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) die("ncclGroupEnd without ncclGroupStart");
  return --group_depth > 0 ? ncclSuccess : flush_group();
}
}  // extern "C"
