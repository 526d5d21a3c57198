// executor/checkpoint/checksum.h — CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as in zlib and
// PNG) for checkpoint file checksums, and 64-bit FNV-1a for fingerprints and parameter hashes, so no
// new dependency is needed. Leaves out hardware CRC32C and cryptographic hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fsdpx {

// Continues a CRC over `data`; start with crc = 0. crc32("123456789") = 0xCBF43926 (the check value
// of the CRC-32/ISO-HDLC catalogue entry, Greg Cook's CRC catalogue).
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t bytes);
inline std::uint32_t crc32(std::string_view s) { return crc32_update(0, s.data(), s.size()); }

// FNV-1a, 64-bit (Fowler, Noll, Vo; IETF draft-eastlake-fnv: offset basis 0xcbf29ce484222325, prime
// 0x100000001b3). fnv1a64("a") = 0xaf63dc4c8601ec8c (the draft's test vector). Continue with `hash`.
inline constexpr std::uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash = kFnv1aOffset);
inline std::uint64_t fnv1a64(std::string_view s) { return fnv1a64(s.data(), s.size()); }

}  // namespace fsdpx
