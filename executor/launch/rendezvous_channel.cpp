// executor/launch/rendezvous_channel.cpp — frame reads on one rendezvous connection (see
// rendezvous_channel.h). A frame that arrived before the peer closed is still returned first, so an
// error message sent just before rank 0 closes is never lost.
#include "executor/launch/rendezvous_channel.h"

#include <vector>

namespace fsdpx::rdzv {
namespace {

ReadResult cut(Channel& c, wire::Frame* out) {
  switch (c.reader.next(out)) {
    case wire::FrameReader::Result::frame: return ReadResult::frame;
    case wire::FrameReader::Result::need_more: return ReadResult::need_more;
    case wire::FrameReader::Result::bad_magic:
    case wire::FrameReader::Result::too_large: break;
  }
  return ReadResult::garbage;
}

}  // namespace

ReadResult read_available(Channel& c, wire::Frame* out) {
  if (const ReadResult r = cut(c, out); r != ReadResult::need_more) return r;
  const net::IoStatus st = net::receive_available(c.fd.get(), c.reader.buffer());
  const ReadResult r = cut(c, out);
  return r == ReadResult::need_more && st == net::IoStatus::closed ? ReadResult::closed : r;
}

ReadResult read_frame(Channel& c, net::Deadline deadline, wire::Frame* out) {
  for (;;) {
    if (const ReadResult r = read_available(c, out); r != ReadResult::need_more) return r;
    std::vector<pollfd> p{{c.fd.get(), POLLIN, 0}};
    if (net::poll_until(p, deadline) == 0) return ReadResult::timeout;
  }
}

bool peer_closed(Channel& c) {
  return net::receive_available(c.fd.get(), c.reader.buffer()) == net::IoStatus::closed;
}

}  // namespace fsdpx::rdzv
