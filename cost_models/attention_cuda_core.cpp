// cost_models/attention_cuda_core.cpp — shared-memory instruction counts of executor/cuda/attention.cu,
// read from its source (see attention_cuda_core.h). Each count is per warp-row (one query row, or one
// key row in dK/dV) and per 32-row tile of the other side, in 128-byte shared-memory wavefronts: a
// warp's shared load or store without bank conflicts, a broadcast, or a shuffle takes one (32 banks of
// 4 bytes per clock: NVIDIA CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and
// later; the tiles are padded to HD + 2 elements so that the strided row reads are conflict-free).
#include "cost_models/attention_cuda_core.h"

#include <cmath>

namespace fsdpx::compute_detail {
namespace {

constexpr double kTile = 32;        // attention.cu kTile: query rows per block, keys per tile
constexpr double kWarpReduce = 5;   // warp_max / warp_sum: 5 xor-shuffles each (common.cuh)

// Loading two tiles of 32 rows x hd 16-bit elements into shared memory: 2·32·hd element stores by 32
// lanes, shared by the 32 warp-rows that use them.
double tile_load_per_row(double hd) { return 2 * kTile * hd / 32 / kTile; }

}  // namespace

// flash_forward_kernel, per row and key tile: S = q·k over hd (two loads per FMA: the row of Q, a
// broadcast, and lane j's key), the tile's max and sum (2 reductions), then O += p_j·V: 32 shuffles of
// p_j and one load of V per FMA (hd per row), plus the K and V tile loads.
double cuda_core_forward_wavefronts_per_row_tile(double hd) {
  return 2 * hd + 2 * kWarpReduce + kTile + hd + tile_load_per_row(hd);
}

// flash_backward_dq_kernel: S and dP = dO·V (4 loads per hd), 32 shuffles of dS_j and dQ += dS_j·K (hd
// loads), plus the K and V tile loads. flash_backward_dkv_kernel, per key row and query tile: S and dP
// (4 per hd), then 32 x (2 shuffles of p_j and dS_j) and dV += p_j·dO, dK += dS_j·Q (2 per hd), plus the
// Q and dO tile loads.
double cuda_core_backward_wavefronts_per_row_tile(double hd) {
  const double dq = 4 * hd + kTile + hd + tile_load_per_row(hd);
  const double dkv = 4 * hd + 2 * kTile + 2 * hd + tile_load_per_row(hd);
  return dq + dkv;
}

double causal_tile_pairs(const RankDims& d, double tile) {
  const double sequences = d.keys / d.seq;
  const double query_tiles = std::ceil(d.tokens / sequences / tile), key_tiles = std::ceil(d.seq / tile);
  const double pairs = query_tiles == key_tiles ? key_tiles * (key_tiles + 1) / 2 : query_tiles * key_tiles / 2;
  return sequences * d.heads * pairs;
}

// Forward: Q, K, V read, O written, fp32 lse per (query, head). Backward: the delta kernel's read of dO
// and O, and dQ, dK, dV read and written (+=), plus the lse and delta statistics.
double flash_layout_hbm_bytes(const RankDims& d, bool backward) {
  constexpr double kStatBytes = 4;
  const double io = backward ? 6 : 2;
  return (io * d.tokens * d.q_dim + io * d.keys * d.kv_dim) * d.act_bytes +
         (backward ? 2 : 1) * d.tokens * d.heads * kStatBytes;
}

// Per sequence and query head: ⌈s_q/32⌉ query tiles of 32 rows (causal_tile_pairs).
double cuda_core_row_tiles(const RankDims& d) { return causal_tile_pairs(d, kTile) * kTile; }

// FLOPs the kernels execute: `products` matrix products of 2·hd FLOPs per (row, key) over 32 keys of
// every row-tile (the diagonal tile in full).
static double executed_flops(const RankDims& d, double products) {
  return products * 2 * (d.q_dim / d.heads) * kTile * cuda_core_row_tiles(d);
}

// S = QKᵀ and O = PV on the fp32 vector peak, the shared-memory wavefronts as a second bound, and the
// HBM bytes of the FlashAttention-2 kernel it mirrors (compute_block.cpp; K/V tile re-reads left to L2).
KernelWork cuda_core_attention_forward(const RankDims& d) {
  KernelWork w;
  w.name = "attn_core";
  w.flops = executed_flops(d, 2);
  w.bytes = flash_layout_hbm_bytes(d, false);
  w.shared_memory_wavefronts = cuda_core_row_tiles(d) * cuda_core_forward_wavefronts_per_row_tile(d.q_dim / d.heads);
  return w;
}

// Backward: 7 products where FA2's has 5, since S and dP are recomputed in both the dQ and the dK/dV
// kernel (dQ: S, dP, dS·K; dK/dV: S, dP, Pᵀ·dO, dSᵀ·Q); the delta kernel's read of dO and O, and dQ, dK,
// dV read and written (+=).
KernelWork cuda_core_attention_backward(const RankDims& d) {
  KernelWork w;
  w.name = "attn_core_bwd";
  w.flops = executed_flops(d, 7);
  w.bytes = flash_layout_hbm_bytes(d, true);
  w.shared_memory_wavefronts = cuda_core_row_tiles(d) * cuda_core_backward_wavefronts_per_row_tile(d.q_dim / d.heads);
  return w;
}

}  // namespace fsdpx::compute_detail
