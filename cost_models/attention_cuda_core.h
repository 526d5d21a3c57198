// cost_models/attention_cuda_core.h — the forward and backward of fsdpx's CUDA-core attention kernels
// (executor/cuda/attention.cu, AttentionKernel::cuda_core) as KernelWork whose time follows the kernels'
// structure: fp32 FMAs on CUDA cores, and the shared-memory instructions each FMA needs, which bind.
// Leaves out instruction issue (below the shared-memory bound), wave tails, occupancy, and the
// compiler's choices (vectorised or hoisted loads would lower the count): a GPU measurement replaces it.
#pragma once

#include "cost_models/compute.h"
#include "cost_models/compute_internal.h"

namespace fsdpx::compute_detail {

// Shared-memory wavefronts (warp-wide shared loads, stores and shuffles) per query row and 32-key tile of
// the forward kernel, and per row and tile of the backward's dQ and dK/dV kernels together, at head size hd.
double cuda_core_forward_wavefronts_per_row_tile(double hd);
double cuda_core_backward_wavefronts_per_row_tile(double hd);
// Query-row x 32-key tiles the causal kernels visit on one rank: 32 rows per tile pair, tile pairs on
// and below the diagonal, per sequence and query head.
double cuda_core_row_tiles(const RankDims& d);

// (query tile, key tile) pairs of `tile` rows each that a causal kernel visits, per rank: per sequence and
// query head, the key tiles up to each query tile's own (the diagonal in full); with CP (zig-zag chunks)
// the local queries see half of the keys on average. Shared with attention_tensor_core.h.
double causal_tile_pairs(const RankDims& d, double tile);
// HBM bytes of fsdpx's flash kernels (both take qkv and write out, lse; backward reads dO, O and the
// statistics, and reads and writes dqkv), `backward` or not.
double flash_layout_hbm_bytes(const RankDims& d, bool backward);

KernelWork cuda_core_attention_forward(const RankDims& d);
KernelWork cuda_core_attention_backward(const RankDims& d);

}  // namespace fsdpx::compute_detail
