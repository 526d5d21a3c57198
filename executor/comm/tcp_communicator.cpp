// executor/comm/tcp_communicator.cpp — the TCP communicator's collectives (see tcp_communicator.h).
// Each one: every member sends its part to the group's rank 0, which checks that all called the same
// collective, computes in rank order 0..n-1 (rank_order_sum.h, as ThreadCommunicator) and sends
// each member its result. Leaves out sending less than the whole buffer where only a chunk is needed.
#include "executor/comm/tcp_communicator.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/comm/rank_order_sum.h"
#include "executor/comm/tcp_mesh.h"
#include "executor/launch/rendezvous.h"

namespace fsdpx {
namespace {

using Bytes = std::vector<std::uint8_t>;

// The sources of a reduction: the hub's own buffer, then every member's payload.
std::vector<const void*> sources(const void* own, const std::vector<Bytes>& got) {
  std::vector<const void*> srcs{own};
  for (std::size_t j = 1; j < got.size(); ++j) srcs.push_back(got[j].data());
  return srcs;
}

// splitmix64: spreads child group ids so that two splits never share one by accident.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

TcpCommunicator::TcpCommunicator(std::shared_ptr<tcp::Mesh> mesh, std::vector<int> members, int rank,
                                 std::uint64_t group_id)
    : mesh_(std::move(mesh)), members_(std::move(members)), rank_(rank), group_id_(group_id) {
  FSDP_CHECK(rank_ >= 0 && rank_ < int(members_.size()), "TcpCommunicator: rank out of range");
}

void TcpCommunicator::abort(const std::string& msg) { mesh_->abort(msg); }

tcp::Header TcpCommunicator::header(std::uint32_t kind, std::int64_t count, ElemType t, int root,
                                    std::size_t payload_bytes) const {
  tcp::Header h;
  h.kind = kind;
  h.group = group_id_;
  h.count = count;
  h.type = std::int32_t(t);
  h.root = root;
  h.payload_bytes = payload_bytes;
  return h;
}

void TcpCommunicator::mismatch(std::uint32_t kind, std::int64_t count, const tcp::Header& got) {
  mesh_->fail(fmt::format("rank {}: mismatched collectives: {} (count {}) vs {} (count {})", members_[rank_],
                          tcp::kind_name(kind), count, tcp::kind_name(got.kind), got.count));
}

std::vector<Bytes> TcpCommunicator::to_hub(std::uint32_t kind, std::int64_t count, ElemType t, int root,
                                           const void* part, std::size_t part_bytes) {
  mesh_->check_aborted();
  const tcp::Header h = header(kind, count, t, root, part_bytes);
  if (rank_ != 0) {
    mesh_->send(members_[0], h, part, tcp::kind_name(kind));
    return {};
  }
  std::vector<Bytes> got(members_.size());
  for (std::size_t j = 1; j < members_.size(); ++j) {
    tcp::Message m = mesh_->receive(members_[j], group_id_, mesh_->timeout_s(), tcp::kind_name(kind));
    if (m.h.kind != kind || m.h.count != count || m.h.type != h.type || m.h.root != root) mismatch(kind, count, m.h);
    got[j] = std::move(m.payload);
  }
  return got;
}

Bytes TcpCommunicator::from_hub(std::uint32_t kind, std::int64_t count, ElemType t, std::size_t bytes) {
  // A little longer than the hub waits for anyone, so its message naming the silent rank arrives first.
  tcp::Message m = mesh_->receive(members_[0], group_id_, mesh_->timeout_s() + 1.0, tcp::kind_name(kind));
  if (m.h.kind != kind || m.h.count != count || m.h.type != std::int32_t(t) || m.payload.size() != bytes)
    mismatch(kind, count, m.h);
  return std::move(m.payload);
}

void TcpCommunicator::to_member(int member, std::uint32_t kind, std::int64_t count, ElemType t, const void* data,
                                std::size_t bytes) {
  mesh_->send(members_[std::size_t(member)], header(kind, count, t, 0, bytes), data, tcp::kind_name(kind));
}

void TcpCommunicator::barrier() {
  to_hub(kBarrier, 0, ElemType::f32, 0, nullptr, 0);
  if (rank_ != 0) {
    from_hub(kBarrier, 0, ElemType::f32, 0);
    return;
  }
  for (int j = 1; j < size(); ++j) to_member(j, kBarrier, 0, ElemType::f32, nullptr, 0);
}

void TcpCommunicator::all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) {
  const std::size_t bytes = elem_bytes(t) * std::size_t(count), all = bytes * std::size_t(size());
  const std::vector<Bytes> got = to_hub(kAllGather, count, t, 0, in, bytes);
  if (rank_ != 0) {
    const Bytes r = from_hub(kAllGather, count, t, all);
    if (all > 0) std::memcpy(out, r.data(), all);  // in place: this rank's chunk is rewritten unchanged
    return;
  }
  for (int j = 0; j < size(); ++j) {
    char* dst = static_cast<char*>(out) + bytes * std::size_t(j);
    const void* src = j == 0 ? in : got[std::size_t(j)].data();
    if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
  }
  for (int j = 1; j < size(); ++j) to_member(j, kAllGather, count, t, out, all);
}

void TcpCommunicator::reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) {
  const std::size_t bytes = elem_bytes(t) * std::size_t(count);
  const std::vector<Bytes> got = to_hub(kReduceScatter, count, t, 0, in, bytes * std::size_t(size()));
  if (rank_ != 0) {
    const Bytes r = from_hub(kReduceScatter, count, t, bytes);
    if (bytes > 0) std::memcpy(out, r.data(), bytes);
    return;
  }
  const std::vector<const void*> srcs = sources(in, got);
  Bytes chunk(bytes);
  for (int j = 1; j < size(); ++j) {
    sum_in_rank_order(t, srcs, count * j, count, chunk.data());
    to_member(j, kReduceScatter, count, t, chunk.data(), bytes);
  }
  // Last: in place (out == in) each element is read from every source before it is written.
  sum_in_rank_order(t, srcs, 0, count, out);
}

void TcpCommunicator::all_reduce_impl(void* buf, std::int64_t count, ElemType t) {
  const std::size_t bytes = elem_bytes(t) * std::size_t(count);
  const std::vector<Bytes> got = to_hub(kAllReduce, count, t, 0, buf, bytes);
  if (rank_ != 0) {
    const Bytes r = from_hub(kAllReduce, count, t, bytes);
    if (bytes > 0) std::memcpy(buf, r.data(), bytes);
    return;
  }
  sum_in_rank_order(t, sources(buf, got), 0, count, buf);
  for (int j = 1; j < size(); ++j) to_member(j, kAllReduce, count, t, buf, bytes);
}

void TcpCommunicator::broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) {
  FSDP_CHECK(root >= 0 && root < size(), "broadcast: root out of range");
  const std::size_t bytes = elem_bytes(t) * std::size_t(count);
  const std::vector<Bytes> got = to_hub(kBroadcast, count, t, root, buf, rank_ == root ? bytes : 0);
  if (rank_ != 0) {
    const Bytes r = from_hub(kBroadcast, count, t, rank_ == root ? 0 : bytes);
    if (rank_ != root && bytes > 0) std::memcpy(buf, r.data(), bytes);
    return;
  }
  if (root != 0) {
    if (got[std::size_t(root)].size() != bytes)
      mesh_->fail(fmt::format("rank {}: broadcast root {} sent {} bytes, expected {}", members_[0], root,
                              got[std::size_t(root)].size(), bytes));
    if (bytes > 0) std::memcpy(buf, got[std::size_t(root)].data(), bytes);
  }
  for (int j = 1; j < size(); ++j) to_member(j, kBroadcast, count, t, buf, j == root ? 0 : bytes);
}

void TcpCommunicator::send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) {
  FSDP_CHECK(peer >= 0 && peer < size() && peer != rank_, "send: peer out of range or self");
  const std::size_t bytes = elem_bytes(t) * std::size_t(count);
  mesh_->send(members_[std::size_t(peer)], header(kSendRecv, count, t, tag, bytes), buf, "send_recv");
}

void TcpCommunicator::recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) {
  FSDP_CHECK(peer >= 0 && peer < size() && peer != rank_, "recv: peer out of range or self");
  const std::size_t bytes = elem_bytes(t) * std::size_t(count);
  const tcp::Message m = mesh_->receive_p2p(members_[std::size_t(peer)], group_id_, tag, mesh_->timeout_s(), "send_recv");
  if (m.h.count != count || m.h.type != std::int32_t(t) || m.payload.size() != bytes)
    mesh_->fail(fmt::format("rank {}: mismatched send_recv: rank {} sent {} elements (tag {}), the receive expects {}",
                            members_[std::size_t(rank_)], members_[std::size_t(peer)], m.h.count, tag, count));
  if (bytes > 0) std::memcpy(buf, m.payload.data(), bytes);
}

std::unique_ptr<Communicator> TcpCommunicator::split(int color, int key) {
  FSDP_CHECK(color >= 0, "split: color must be non-negative");
  const std::int32_t mine[2] = {color, key};
  const std::size_t table_bytes = sizeof mine * std::size_t(size());
  const std::vector<Bytes> got = to_hub(kSplit, 0, ElemType::f32, 0, mine, sizeof mine);
  std::vector<std::int32_t> table(2 * std::size_t(size()));  // (color, key) of every group rank
  if (rank_ == 0) {
    std::memcpy(table.data(), mine, sizeof mine);
    for (int j = 1; j < size(); ++j) {
      if (got[std::size_t(j)].size() != sizeof mine)
        mesh_->fail(fmt::format("rank {}: corrupt split from rank {}", members_[0], members_[std::size_t(j)]));
      std::memcpy(table.data() + 2 * j, got[std::size_t(j)].data(), sizeof mine);
    }
    for (int j = 1; j < size(); ++j) to_member(j, kSplit, 0, ElemType::f32, table.data(), table_bytes);
  } else {
    const Bytes r = from_hub(kSplit, 0, ElemType::f32, table_bytes);
    std::memcpy(table.data(), r.data(), table_bytes);
  }
  std::vector<std::pair<int, int>> same;  // (key, group rank) of my color, as MPI_Comm_split orders them
  for (int j = 0; j < size(); ++j)
    if (table[2 * std::size_t(j)] == color) same.emplace_back(table[2 * std::size_t(j) + 1], j);
  std::sort(same.begin(), same.end());
  std::vector<int> members;
  int new_rank = 0;
  for (std::size_t i = 0; i < same.size(); ++i) {
    members.push_back(members_[std::size_t(same[i].second)]);
    if (same[i].second == rank_) new_rank = int(i);
  }
  const std::uint64_t child = mix(mix(group_id_ ^ ++splits_) + std::uint64_t(color));
  return std::make_unique<TcpCommunicator>(mesh_, std::move(members), new_rank, child);
}

std::unique_ptr<Communicator> make_tcp_communicator(Rendezvous& rdzv, double timeout_s) {
  auto mesh = tcp::Mesh::connect(rdzv, std::max(timeout_s, kTcpConnectTimeoutS), timeout_s);
  std::vector<int> members(std::size_t(rdzv.world_size()));
  for (int r = 0; r < rdzv.world_size(); ++r) members[std::size_t(r)] = r;
  return std::make_unique<TcpCommunicator>(std::move(mesh), std::move(members), rdzv.rank(), 0);
}

}  // namespace fsdpx
