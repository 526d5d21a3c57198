// executor/model/context_positions.h — which tokens of each sequence a context-parallel rank holds: 2·cp
// chunks, rank r holding chunks r and 2·cp − 1 − r (the load-balanced causal assignment of Megatron-Core
// and torchtitan), read by both backends' models (device-neutral: fsdp_model_desc). Leaves out other
// assignments (plain contiguous chunks).
#pragma once

#include <cstdint>
#include <vector>

namespace fsdpx {

// Global positions (0 ≤ p < seq) of the tokens a context-parallel rank holds, in its local order:
// chunk cp_rank, then chunk 2·cp − 1 − cp_rank, each seq / (2·cp) tokens (all of them when cp = 1).
std::vector<std::int64_t> context_positions(std::int64_t seq, int cp, int cp_rank);

}  // namespace fsdpx
