// tests/cuda/emulated/nccl_clique.cpp — the stream-side work of the emulated NCCL (see nccl_clique.h).
#include "tests/cuda/emulated/nccl_clique.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/cuda/emulated/elem.h"

namespace fsdpx::cuda::emu {
namespace {

std::size_t elem_bytes(ncclDataType_t t) { return t == ncclBfloat16 ? 2 : 4; }

// out[i] = Σ_r in_r[offset + i] in fp32, ranks in order, rounded once to E.
template <class E>
void sum_in_rank_order(const std::vector<const void*>& in, std::size_t offset, std::size_t count, void* out) {
  for (std::size_t i = 0; i < count; ++i) {
    float acc = to_f32(static_cast<const E*>(in[0])[offset + i]);
    for (std::size_t r = 1; r < in.size(); ++r) acc += to_f32(static_cast<const E*>(in[r])[offset + i]);
    static_cast<E*>(out)[i] = from_f32<E>(acc);
  }
}

void reduce(const std::vector<const void*>& in, std::size_t offset, std::size_t count, ncclDataType_t t, void* out) {
  if (t == ncclBfloat16) sum_in_rank_order<bf16>(in, offset, count, out);
  else sum_in_rank_order<float>(in, offset, count, out);
}

// What `rank` writes to its output, computed from every rank's input before anyone writes.
std::vector<unsigned char> result(CollKind kind, const std::vector<const void*>& in, int rank, std::size_t count,
                                  ncclDataType_t t, int root) {
  const std::size_t e = elem_bytes(t), n = in.size();
  std::vector<unsigned char> out((kind == CollKind::all_gather ? n : 1) * count * e);
  switch (kind) {
    case CollKind::all_gather:
      for (std::size_t r = 0; r < n; ++r) std::memcpy(out.data() + r * count * e, in[r], count * e);
      break;
    case CollKind::reduce_scatter: reduce(in, std::size_t(rank) * count, count, t, out.data()); break;
    case CollKind::all_reduce: reduce(in, 0, count, t, out.data()); break;
    case CollKind::broadcast: std::memcpy(out.data(), in[std::size_t(root)], count * e); break;
  }
  return out;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "FAKE NCCL: %s\n", what);
  std::abort();
}

}  // namespace

bool Clique::wait(std::unique_lock<std::mutex>& lk, const std::function<bool()>& ready) {
  cv_.wait(lk, [&] { return aborted_ || ready(); });
  return !aborted_;
}

void Clique::abort() {
  std::lock_guard<std::mutex> lk(mu_);
  aborted_ = true;
  cv_.notify_all();
}

// Three meetings: all inputs posted; all results computed (nobody reads an input any more, so in-place
// outputs may be written); the last rank to leave forgets the round.
void Clique::collective(std::uint64_t seq, int rank, CollKind kind, const void* in, void* out, std::size_t count,
                        ncclDataType_t type, int root) {
  std::unique_lock<std::mutex> lk(mu_);
  Round& r = rounds_[seq];
  if (r.in.empty()) r.in.assign(std::size_t(nranks_), nullptr);
  r.in[std::size_t(rank)] = in;
  ++r.arrived;
  cv_.notify_all();
  if (!wait(lk, [&] { return r.arrived == nranks_; })) return;
  const std::vector<const void*> inputs = r.in;
  lk.unlock();
  const std::vector<unsigned char> mine = result(kind, inputs, rank, count, type, root);
  lk.lock();
  ++r.computed;
  cv_.notify_all();
  if (!wait(lk, [&] { return r.computed == nranks_; })) return;
  lk.unlock();
  if (!mine.empty()) std::memcpy(out, mine.data(), mine.size());
  lk.lock();
  if (++r.left == nranks_) rounds_.erase(seq);
}

void Clique::point_to_point(int rank, const std::vector<P2POp>& ops) {
  std::unique_lock<std::mutex> lk(mu_);
  for (const P2POp& op : ops)
    if (op.send) mailbox_[{rank, op.peer, op.seq}] = Message{op.buf, op.bytes, false};
  cv_.notify_all();
  for (const P2POp& op : ops) {
    if (op.send) continue;
    const auto key = std::make_tuple(op.peer, rank, op.seq);
    if (!wait(lk, [&] { return mailbox_.count(key) > 0; })) return;
    const Message m = mailbox_.at(key);
    if (m.bytes != op.bytes) die("a receive of another size than its send");
    lk.unlock();
    if (m.bytes > 0) std::memcpy(op.buf, m.buf, m.bytes);
    lk.lock();
    mailbox_.at(key).taken = true;
    cv_.notify_all();
  }
  for (const P2POp& op : ops) {  // rendezvous: a send completes when its receiver took the data
    if (!op.send) continue;
    const auto key = std::make_tuple(rank, op.peer, op.seq);
    if (!wait(lk, [&] { return mailbox_.at(key).taken; })) return;
    mailbox_.erase(key);
  }
}

}  // namespace fsdpx::cuda::emu
