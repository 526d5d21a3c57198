// executor/launch/rendezvous_wire.cpp — encoding and decoding of the rendezvous frames (see
// rendezvous_wire.h). Decoders return nullopt on a truncated or oversized body instead of reading past it.
#include "executor/launch/rendezvous_wire.h"

namespace fsdpx::wire {
namespace {

void put_u16(Bytes& b, std::uint16_t v) {
  b.push_back(std::uint8_t(v >> 8));
  b.push_back(std::uint8_t(v));
}

void put_u32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(std::uint8_t(v >> shift));
}

// Reads big-endian integers from a body, failing (ok = false) instead of overrunning it.
struct Cursor {
  const Bytes& b;
  std::size_t at = 0;
  bool ok = true;

  std::uint32_t u32() {
    if (at > b.size() || b.size() - at < 4) {
      ok = false;
      return 0;
    }
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | b[at++];
    return v;
  }
  Bytes take(std::size_t n) {
    if (b.size() - at < n) {
      ok = false;
      return {};
    }
    Bytes out(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
    at += n;
    return out;
  }
};

std::uint32_t read_u32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

}  // namespace

Bytes encode_frame(MsgType type, const Bytes& body) {
  Bytes out;
  out.reserve(kHeaderBytes + body.size());
  put_u32(out, kMagic);
  put_u16(out, kProtocolVersion);
  put_u16(out, std::uint16_t(type));
  put_u32(out, std::uint32_t(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes encode_frame(MsgType type, const std::string& body) {
  return encode_frame(type, Bytes(body.begin(), body.end()));
}

FrameReader::Result FrameReader::next(Frame* out) {
  if (buffer_.size() < kHeaderBytes) return Result::need_more;
  if (read_u32(buffer_.data()) != kMagic) return Result::bad_magic;
  const std::uint32_t length = read_u32(buffer_.data() + 8);
  if (length > kMaxBodyBytes) return Result::too_large;
  if (buffer_.size() < kHeaderBytes + length) return Result::need_more;
  out->version = std::uint16_t((buffer_[4] << 8) | buffer_[5]);
  out->type = MsgType((buffer_[6] << 8) | buffer_[7]);
  const auto body_begin = buffer_.begin() + std::ptrdiff_t(kHeaderBytes);
  const auto body_end = body_begin + std::ptrdiff_t(length);
  out->body.assign(body_begin, body_end);
  buffer_.erase(buffer_.begin(), body_end);
  return Result::frame;
}

Bytes encode_hello(const Hello& h) {
  Bytes out;
  put_u32(out, std::uint32_t(h.rank));
  put_u32(out, std::uint32_t(h.world_size));
  out.insert(out.end(), h.fingerprint.begin(), h.fingerprint.end());
  return out;
}

std::optional<Hello> decode_hello(const Bytes& body) {
  Cursor c{body};
  Hello h;
  h.rank = int(c.u32());
  h.world_size = int(c.u32());
  if (!c.ok) return std::nullopt;
  h.fingerprint.assign(body.begin() + 8, body.end());
  return h;
}

Bytes encode_blobs(const std::vector<Bytes>& blobs) {
  Bytes out;
  put_u32(out, std::uint32_t(blobs.size()));
  for (const Bytes& b : blobs) {
    put_u32(out, std::uint32_t(b.size()));
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

std::optional<std::vector<Bytes>> decode_blobs(const Bytes& body) {
  Cursor c{body};
  const std::uint32_t count = c.u32();
  // Each blob needs at least its 4-byte length: a larger count is a corrupt body.
  if (!c.ok || count > body.size() / 4) return std::nullopt;
  std::vector<Bytes> blobs(count);
  for (Bytes& b : blobs) {
    const std::uint32_t n = c.u32();
    b = c.take(n);
    if (!c.ok) return std::nullopt;
  }
  if (c.at != body.size()) return std::nullopt;
  return blobs;
}

std::string to_string(MsgType t) {
  switch (t) {
    case MsgType::hello: return "hello";
    case MsgType::welcome: return "welcome";
    case MsgType::error: return "error";
    case MsgType::data: return "data";
    case MsgType::ack: return "ack";
    case MsgType::release: return "release";
    case MsgType::gather: return "gather";
    case MsgType::gathered: return "gathered";
  }
  return "type " + std::to_string(int(t));
}

}  // namespace fsdpx::wire
