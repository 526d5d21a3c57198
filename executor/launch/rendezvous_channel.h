// executor/launch/rendezvous_channel.h — one rendezvous connection: the socket, the bytes received
// so far and the rank at the other end, with the two ways the rendezvous reads frames from it
// (whatever has arrived, for rank 0's many peers; or wait until a deadline, for the other ranks).
// Leaves out writing: frames are small and go out whole through net::send_all.
#pragma once

#include <string>

#include "executor/launch/rendezvous_wire.h"
#include "executor/launch/socket_io.h"

namespace fsdpx::rdzv {

struct Channel {
  net::Fd fd;
  wire::FrameReader reader;
  std::string peer;  // "ip:port" of the other side (rank 0 only)
  int rank = -1;     // the rank at the other end, once known
};

enum class ReadResult {
  frame,      // `out` holds the next frame
  need_more,  // read_available: no complete frame yet, connection open
  timeout,    // read_frame: the deadline passed first
  closed,     // the other side closed or reset the connection (frames before that were returned)
  garbage,    // not our protocol (wrong magic) or an absurd length
};

// Takes in what has arrived (never waits) and returns the next complete frame if there is one.
ReadResult read_available(Channel& c, wire::Frame* out);

// Waits up to `deadline` for the next complete frame.
ReadResult read_frame(Channel& c, net::Deadline deadline, wire::Frame* out);

// True when the other side has closed the connection (any bytes it sent stay buffered in `c`).
bool peer_closed(Channel& c);

}  // namespace fsdpx::rdzv
