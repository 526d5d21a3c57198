// executor/data/token_file.cpp — reading and writing FSDPXTOK token files and raw token arrays.
#include "executor/data/token_file.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "core/errors.h"
#include "core/input_file.h"
#include "core/output_file.h"

namespace fsdpx {

namespace {

std::uint64_t read_le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void write_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string read_all(const std::string& path) { return read_input_file(path, "data file", kMaxDataFileBytes); }

std::vector<std::int32_t> decode_tokens(const std::string& path, const unsigned char* p, std::size_t count,
                                        int bytes) {
  std::vector<std::int32_t> tokens(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t v = read_le(p + i * std::size_t(bytes), bytes);
    if (v > 0x7fffffffULL)
      throw ConfigError(fmt::format("{}: token {} is {}, beyond the int32 range", path, i, v));
    tokens[i] = static_cast<std::int32_t>(v);
  }
  return tokens;
}

}  // namespace

const char* token_dtype_name(TokenDType t) { return t == TokenDType::u16 ? "uint16" : "uint32"; }
int token_dtype_bytes(TokenDType t) { return t == TokenDType::u16 ? 2 : 4; }

bool is_token_file(const std::string& path) {
  check_regular_input(path, "data file");  // a device or FIFO is refused before it is opened
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, kTokenFileMagic, sizeof magic) == 0;
}

std::vector<std::int32_t> read_token_file(const std::string& path, std::optional<TokenDType> raw_dtype) {
  const std::string data = read_all(path);
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  if (data.size() >= 8 && std::memcmp(p, kTokenFileMagic, 8) == 0) {
    if (data.size() < kTokenFileHeaderBytes)
      throw ConfigError(fmt::format("{}: truncated FSDPXTOK header ({} of {} bytes)", path, data.size(),
                                    kTokenFileHeaderBytes));
    const auto version = read_le(p + 8, 4), bytes = read_le(p + 12, 4), count = read_le(p + 16, 8);
    if (version != kTokenFileVersion)
      throw ConfigError(fmt::format("{}: FSDPXTOK version {} (this fsdpx reads version {})", path, version,
                                    kTokenFileVersion));
    if (bytes != 2 && bytes != 4)
      throw ConfigError(fmt::format("{}: FSDPXTOK token size {} bytes (expected 2 or 4)", path, bytes));
    const std::size_t expected = kTokenFileHeaderBytes + count * bytes;
    if (data.size() != expected)
      throw ConfigError(fmt::format("{}: header says {} tokens ({} bytes in all) but the file has {} bytes", path,
                                    count, expected, data.size()));
    return decode_tokens(path, p + kTokenFileHeaderBytes, count, int(bytes));
  }
  if (!raw_dtype)
    throw ConfigError(fmt::format("{}: no FSDPXTOK header; pass --data-dtype uint16|uint32 for a raw token file",
                                  path));
  const int bytes = token_dtype_bytes(*raw_dtype);
  if (data.size() % std::size_t(bytes) != 0)
    throw ConfigError(fmt::format("{}: {} bytes is not a whole number of {} tokens", path, data.size(),
                                  token_dtype_name(*raw_dtype)));
  return decode_tokens(path, p, data.size() / std::size_t(bytes), bytes);
}

void write_token_file(const std::string& path, const std::vector<std::int32_t>& tokens, TokenDType dtype) {
  const int bytes = token_dtype_bytes(dtype);
  const std::int64_t max_token = dtype == TokenDType::u16 ? 0xffff : 0x7fffffff;
  std::string out(kTokenFileMagic, sizeof kTokenFileMagic);
  write_le(out, kTokenFileVersion, 4);
  write_le(out, std::uint64_t(bytes), 4);
  write_le(out, tokens.size(), 8);
  for (std::int32_t t : tokens) {
    if (t < 0 || t > max_token)
      throw ConfigError(fmt::format("{}: token {} does not fit {}", path, t, token_dtype_name(dtype)));
    write_le(out, std::uint64_t(t), bytes);
  }
  write_output_file(path, out);
}

}  // namespace fsdpx
