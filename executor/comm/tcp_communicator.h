// executor/comm/tcp_communicator.h — a host Communicator across processes over TCP, for the CPU backend
// when each rank is its own process (torchrun, srun, mpirun or `fsdpx run --processes`). Every
// collective is a star through the group's rank 0, which sums in rank order 0..n-1 exactly as
// ThreadCommunicator does, so results are bit-identical to the threads run. Sub-groups from split()
// share the family's pairwise sockets (tcp_mesh.h) and tag frames with a group id. No wait is
// unbounded: the group's rank 0 waits timeout_s for each member, the others timeout_s + 1 s for it,
// then the family aborts with a message naming the rank that did not answer. A point-to-point send is
// one frame to the peer (buffered by the sockets and the peer's inbox). Leaves out speed
// (no ring, no pipelining, no overlap) and byte-order conversion between unlike hosts.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/comm/communicator.h"

namespace fsdpx {

class Rendezvous;
namespace tcp {
class Mesh;
struct Header;
}

class TcpCommunicator final : public Communicator {
 public:
  // `members`: the global ranks of the group in group-rank order; `rank`: this process's index in it.
  TcpCommunicator(std::shared_ptr<tcp::Mesh> mesh, std::vector<int> members, int rank, std::uint64_t group_id);
  int rank() const override { return rank_; }
  int size() const override { return int(members_.size()); }
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  void abort(const std::string& msg) override;

 protected:
  void all_gather_impl(const void* in, void* out, std::int64_t count, ElemType t) override;
  void reduce_scatter_impl(const void* in, void* out, std::int64_t count, ElemType t) override;
  void all_reduce_impl(void* buf, std::int64_t count, ElemType t) override;
  void broadcast_impl(void* buf, std::int64_t count, int root, ElemType t) override;
  void send_impl(const void* buf, std::int64_t count, ElemType t, int peer, int tag) override;
  void recv_impl(void* buf, std::int64_t count, ElemType t, int peer, int tag) override;

 private:
  tcp::Header header(std::uint32_t kind, std::int64_t count, ElemType t, int root, std::size_t payload_bytes) const;
  // Fails the family: this rank expected `kind` with `count` elements and got `got`.
  [[noreturn]] void mismatch(std::uint32_t kind, std::int64_t count, const tcp::Header& got);
  // Every rank sends its header and `part` to the group's rank 0 (the hub). The hub gets back every
  // member's payload (index 0 empty: its own buffers), checked to be the same collective; others get {}.
  std::vector<std::vector<std::uint8_t>> to_hub(std::uint32_t kind, std::int64_t count, ElemType t, int root,
                                                const void* part, std::size_t part_bytes);
  // Non-hub: the hub's answer, which must be `bytes` long.
  std::vector<std::uint8_t> from_hub(std::uint32_t kind, std::int64_t count, ElemType t, std::size_t bytes);
  // Hub: sends `bytes` of `data` to group rank `member`.
  void to_member(int member, std::uint32_t kind, std::int64_t count, ElemType t, const void* data, std::size_t bytes);

  std::shared_ptr<tcp::Mesh> mesh_;
  std::vector<int> members_;
  int rank_;
  std::uint64_t group_id_;
  std::uint64_t splits_ = 0;  // split() calls so far: part of each child's group id
};

// How long connecting the ranks may take at least: torchtitan's init_timeout_seconds (300 s), for
// start-up; the collectives afterwards use the communication timeout.
inline constexpr double kTcpConnectTimeoutS = 300.0;
// The default communication timeout (`fsdpx run --comm-timeout`): torchtitan's train_timeout_seconds,
// 100 s (torchtitan/config/job_config.py, Comm).
inline constexpr double kDefaultCommTimeoutS = 100.0;

// Collective over the rendezvous's ranks: connects them pairwise (within max(timeout_s, 300 s)) and
// returns this rank's communicator of the world group. Throws CommAborted naming a rank that could not be
// reached. Afterwards each wait, and each peer's silence (heartbeats, tcp_mesh.h), is bounded by timeout_s.
std::unique_ptr<Communicator> make_tcp_communicator(Rendezvous& rdzv, double timeout_s = kDefaultCommTimeoutS);

}  // namespace fsdpx
