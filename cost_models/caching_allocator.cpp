// cost_models/caching_allocator.cpp — the caching allocator's rounding and per-stream pools
// (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, constants as named there).
#include "cost_models/caching_allocator.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace fsdpx {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kMinBlockSize = 512;         // all sizes are rounded to at least 512 bytes
constexpr double kMinLargeAlloc = 10 * kMiB;  // allocations between 1 and 10 MiB may use kLargeBuffer
constexpr double kRoundLarge = 2 * kMiB;      // round up large allocations to 2 MiB
constexpr double kLargeBuffer = 20 * kMiB;    // the large pool's expandable-segment page

double round_up(double bytes, double unit) { return std::ceil(bytes / unit) * unit; }

}  // namespace

double allocator_block_bytes(double request_bytes) {
  FSDP_CHECK(request_bytes >= 0, "allocator_block_bytes: negative request");
  if (request_bytes < kMinBlockSize) return kMinBlockSize;
  const double rounded = round_up(request_bytes, kMinBlockSize);
  return rounded >= kMinLargeAlloc ? round_up(rounded, kRoundLarge) : rounded;
}

double expandable_mapped_bytes(double bytes) {
  FSDP_CHECK(bytes >= 0, "expandable_mapped_bytes: negative bytes");
  return round_up(bytes, kLargeBuffer);
}

// Pools never lend to each other, so the peaks add up even when they fall at different moments.
double reserved_bytes(const StreamPoolBytes& p) {
  FSDP_CHECK(p.compute_allocated >= 0 && p.compute_holes >= 0 && p.all_gather >= 0 && p.reduce_scatter >= 0,
             "reserved_bytes: negative pool");
  return expandable_mapped_bytes(p.compute_allocated + p.compute_holes) + expandable_mapped_bytes(p.all_gather) +
         expandable_mapped_bytes(p.reduce_scatter);
}

double fsdp2_all_gather_pool_bytes(const std::vector<double>& gather_bytes) {
  double high = gather_bytes.empty() ? 0 : allocator_block_bytes(gather_bytes[0]);
  for (std::size_t u = 1; u < gather_bytes.size(); ++u)
    high = std::max(high, allocator_block_bytes(gather_bytes[u - 1]) + allocator_block_bytes(gather_bytes[u]));
  return high;
}

}  // namespace fsdpx
