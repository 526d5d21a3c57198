// cost_models/attention_tensor_core.h — the forward and backward of fsdpx's tensor-core attention kernels
// (executor/cuda/attention_tc*.cu, AttentionKernel::tensor_core) as KernelWork: FlashAttention-2's tiling
// (Dao 2023, arXiv:2307.08691, Algorithms 1 and 2) on WMMA 16x16x16 tiles with the scores, probabilities
// and fp32 accumulators in shared memory, whose traffic binds. UNMEASURED: costed from the algorithm and
// the kernels' source, never run on a GPU (issue 29 measures it; `fsdpx calibrate` then replaces this).
// Leaves out bank conflicts, occupancy (one or two blocks per SM), wave tails and instruction issue.
#pragma once

#include "cost_models/compute.h"
#include "cost_models/compute_internal.h"

namespace fsdpx::compute_detail {

// Shared-memory bytes one warp (16 query rows, or 16 key rows in dK/dV) moves per 64-row tile of the
// other side, at head size hd: the forward kernel, and the backward's dQ and dK/dV kernels together.
double tensor_core_forward_shared_bytes_per_warp_tile(double hd);
double tensor_core_backward_shared_bytes_per_warp_tile(double hd);
// (16-row warp tile, 64-row tile) pairs the causal kernels visit on one rank: per sequence and query
// head, 4 warps per 64-query block, key tiles up to the block's diagonal (the diagonal tile in full).
double tensor_core_warp_tiles(const RankDims& d);

KernelWork tensor_core_attention_forward(const RankDims& d);
KernelWork tensor_core_attention_backward(const RankDims& d);

}  // namespace fsdpx::compute_detail
