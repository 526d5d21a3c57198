// executor/model/context_positions.cpp — the load-balanced causal chunks of context parallelism (see
// context_positions.h).
#include "executor/model/context_positions.h"

#include "core/errors.h"

namespace fsdpx {

std::vector<std::int64_t> context_positions(std::int64_t seq, int cp, int cp_rank) {
  FSDP_CHECK(cp >= 1 && cp_rank >= 0 && cp_rank < cp, "context_positions: cp rank out of range");
  std::vector<std::int64_t> pos;
  if (cp == 1) {
    for (std::int64_t t = 0; t < seq; ++t) pos.push_back(t);
    return pos;
  }
  FSDP_CHECK(seq % (2 * cp) == 0, "context_positions: seq must be divisible by 2·cp");
  const std::int64_t chunk = seq / (2 * cp);
  for (std::int64_t c : {std::int64_t(cp_rank), std::int64_t(2 * cp - 1 - cp_rank)})
    for (std::int64_t t = 0; t < chunk; ++t) pos.push_back(c * chunk + t);
  return pos;
}

}  // namespace fsdpx
