// executor/checkpoint/params_hash.cpp — chunked FNV-1a of the parameters (see params_hash.h).
#include "executor/checkpoint/params_hash.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include <fmt/format.h>

#include "executor/checkpoint/checksum.h"

namespace fsdpx {

std::string params_hash(const std::vector<float>& params, unsigned threads) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  const std::size_t n = params.size() * sizeof(float);
  if (n <= kParamsHashChunkBytes) return fmt::format("{:016x}", fnv1a64(bytes, n));
  const std::size_t chunks = (n + kParamsHashChunkBytes - 1) / kParamsHashChunkBytes;
  std::vector<std::uint64_t> chunk_hash(chunks);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t c = next++; c < chunks; c = next++) {
      const std::size_t begin = c * kParamsHashChunkBytes;
      chunk_hash[c] = fnv1a64(bytes + begin, std::min(kParamsHashChunkBytes, n - begin));
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min<std::size_t>(threads, chunks); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return fmt::format("{:016x}", fnv1a64(chunk_hash.data(), chunk_hash.size() * sizeof(std::uint64_t)));
}

}  // namespace fsdpx
