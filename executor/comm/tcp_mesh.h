// executor/comm/tcp_mesh.h — the connections under the TCP communicator: one socket between every pair
// of ranks (addresses swapped through the rendezvous), fixed 40-byte headers tagged with a group id,
// per-peer inboxes so a frame for a later collective or point-to-point message waits its turn, and the
// family's abort flag (an abort frame goes to every peer, and each receiver passes it on once). A send
// that finds the socket full reads what its peers sent meanwhile, so two ranks sending to each other
// never wait on one another. Every wait has a deadline. A heartbeat thread sends an empty frame to every
// peer each second (heartbeat.h); a rank that waits and has heard nothing from a peer, not even a
// heartbeat, for silence_limit_s (heartbeat.h: a stopped peer is named within timeout_s of stopping)
// names that peer and aborts the family. Leaves out byte-order conversion (all
// ranks are assumed to share one architecture), encryption and reconnecting.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/comm/heartbeat.h"
#include "executor/launch/socket_io.h"

namespace fsdpx {
class Rendezvous;
}

namespace fsdpx::tcp {

// Frame kinds: the collectives (communicator.h CollectiveOp), a heartbeat, and an abort.
inline constexpr std::uint32_t kHeartbeat = 98;
inline constexpr std::uint32_t kAbort = 99;
const char* kind_name(std::uint32_t kind);

// Fields in host byte order, no padding (static_assert in tcp_mesh.cpp).
struct Header {
  std::uint32_t magic = 0;
  std::uint32_t kind = 0;
  std::uint64_t group = 0;          // which group of the family the frame belongs to
  std::int64_t count = 0;           // elements, as passed to the collective
  std::uint64_t payload_bytes = 0;  // bytes that follow the header
  std::int32_t type = 0;            // ElemType
  std::int32_t root = 0;            // broadcast: the root; send_recv: the tag
};

struct Message {
  Header h;
  std::vector<std::uint8_t> payload;
};

class Mesh {
 public:
  // Collective over the rendezvous's ranks: connects every pair and starts the heartbeat. Throws
  // CommAborted naming a rank that could not be reached within connect_timeout_s. Afterwards every wait
  // and every peer's silence is bounded by timeout_s.
  static std::shared_ptr<Mesh> connect(Rendezvous& rdzv, double connect_timeout_s, double timeout_s);
  Mesh(int rank, int size, double timeout_s);
  ~Mesh();

  int rank() const { return rank_; }
  int size() const { return int(peers_.size()); }
  double timeout_s() const { return timeout_s_; }

  // Sends header + payload to global rank `peer`; fail()s when it has gone or stops reading.
  void send(int peer, Header h, const void* payload, const char* what);
  // The next collective frame from `peer` (point-to-point frames stay queued), which must belong to
  // `group`. Waits at most wait_s, then fail()s naming `peer`; fail()s at once when it closed the
  // connection; throws CommAborted on an abort frame from any peer or a local abort().
  Message receive(int peer, std::uint64_t group, double wait_s, const char* what);
  // The oldest point-to-point frame (kind send_recv) from `peer` in `group` with tag `tag`; waits as
  // receive() does.
  Message receive_p2p(int peer, std::uint64_t group, int tag, double wait_s, const char* what);

  // Marks the family aborted (the first message wins) and sends an abort frame to every peer.
  void abort(const std::string& msg);
  // Throws CommAborted if the family was aborted.
  void check_aborted();
  // abort(msg), then throws CommAborted("collective aborted: " + msg).
  [[noreturn]] void fail(const std::string& msg);

 private:
  struct Peer {
    net::Fd fd;
    std::vector<std::uint8_t> bytes;  // received, not yet cut into messages
    std::deque<Message> inbox;
    bool closed = false;
    std::mutex send_mu;      // abort() and the heartbeat send from other threads
    bool mid_frame = false;  // a frame is partly written (guarded by send_mu)
    std::chrono::steady_clock::time_point last_heard;  // when bytes last arrived (or the connection was made)
  };
  // The heartbeat thread's beat: an empty frame to every peer whose socket is free; a peer that has read
  // nothing for timeout_s is recorded in stalled_peer_.
  void beat();
  // fail()s naming a peer that has sent nothing, not even a heartbeat, for timeout_s, or that the
  // heartbeat found not reading.
  void check_silent_peers();
  static std::shared_ptr<Mesh> connect_peers(Rendezvous& rdzv, double connect_timeout_s, double timeout_s);
  net::IoStatus write_frame(Peer& p, const Header& h, const void* payload, net::Deadline deadline);
  // Reads what has arrived on every open connection into the inboxes; records abort frames.
  void pump();
  // Waits for the frame of `peer`'s inbox at the index `pick` returns (-1: none yet) and removes it.
  Message wait_for(int peer, const std::function<int(const std::deque<Message>&)>& pick, double wait_s,
                   const char* what);
  // poll() on every open connection for input (and on `out_fd` for output when >= 0) until `deadline`.
  void poll_peers(net::Deadline deadline, int out_fd);
  void cut_messages(int peer);
  // After an abort frame arrived: sends it on to every peer, then throws CommAborted.
  void forward_abort();

  int rank_;
  double timeout_s_;
  std::vector<std::unique_ptr<Peer>> peers_;  // indexed by global rank; [rank_] unused
  std::mutex mu_;
  bool aborted_ = false;
  bool abort_sent_ = false;  // this rank's abort frames went out (once per family)
  std::string abort_msg_;
  std::atomic<int> stalled_peer_{-1};
  HeartbeatThread heartbeat_;  // last: stopped before the peers it writes to are destroyed
};

}  // namespace fsdpx::tcp
