// executor/launch/rendezvous_wire.h — the rendezvous's messages on the wire: a 12-byte header
// (magic "FSDX", protocol version, type, body length; big-endian) and a body, cut out of a byte stream
// that arrives in arbitrary pieces. Also the hello and the list-of-blobs bodies. Leaves out
// compression, checksums (TCP's suffice here) and any negotiation between protocol versions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdpx::wire {

using Bytes = std::vector<std::uint8_t>;

inline constexpr std::uint32_t kMagic = 0x46534458;  // "FSDX"
inline constexpr std::uint16_t kProtocolVersion = 1;
inline constexpr std::size_t kHeaderBytes = 12;
inline constexpr std::uint32_t kMaxBodyBytes = 64u << 20;  // far above any id or host list

enum class MsgType : std::uint16_t {
  hello = 1,  // client -> rank 0: Hello
  welcome,    // rank 0 -> client: every rank has joined
  error,      // rank 0 -> client: the rendezvous failed; body = the message
  data,       // rank 0 -> client: the broadcast payload
  ack,        // client -> rank 0: barrier arrival
  release,    // rank 0 -> client: every rank arrived at the barrier
  gather,     // client -> rank 0: this rank's blob for exchange()
  gathered,   // rank 0 -> client: every rank's blob (encode_blobs)
};

struct Frame {
  std::uint16_t version = kProtocolVersion;
  MsgType type = MsgType::error;
  Bytes body;
};

Bytes encode_frame(MsgType type, const Bytes& body);
Bytes encode_frame(MsgType type, const std::string& body);

// Accumulates one connection's bytes and cuts complete frames out of them.
class FrameReader {
 public:
  enum class Result { need_more, frame, bad_magic, too_large };

  Bytes& buffer() { return buffer_; }
  // Removes the first complete frame into `out` when there is one. A frame of another protocol
  // version is returned as is (its `version` tells); the caller decides.
  Result next(Frame* out);

 private:
  Bytes buffer_;
};

struct Hello {
  int rank = -1;
  int world_size = 0;
  std::string fingerprint;
};

Bytes encode_hello(const Hello& h);
std::optional<Hello> decode_hello(const Bytes& body);

// A list of byte strings: count, then (length, bytes) each.
Bytes encode_blobs(const std::vector<Bytes>& blobs);
std::optional<std::vector<Bytes>> decode_blobs(const Bytes& body);

std::string to_string(MsgType t);

}  // namespace fsdpx::wire
