// cost_models/attention_tensor_core.cpp — shared-memory traffic of executor/cuda/attention_tc.cu and
// attention_tc_backward.cu, read from their source (see attention_tensor_core.h). Counted per warp and
// 64-row tile in bytes: a WMMA fragment load or store of a 16x16 tile moves its bytes through shared
// memory (load/store_matrix_sync), as do the softmax's reads of S and writes of P and the tile loads;
// timed at 128 bytes per SM per clock (one wavefront: NVIDIA CUDA C++ Programming Guide, "Shared
// Memory"), the bound cost_models/attention_cuda_core.h uses. The tensor-core bound is FlashAttention-2's
// own measured curve (GpuSpec::attention_efficiency, at most ~35% of H100's peak: Shah et al. 2024,
// FlashAttention-3, arXiv:2407.08608, abstract), a ceiling this simpler kernel (no pipelining, no
// register-resident softmax, 7 products in backward where FA2 runs 5) does not beat.
#include "cost_models/attention_tensor_core.h"

#include "cost_models/attention_cuda_core.h"

namespace fsdpx::compute_detail {
namespace {

constexpr double kBlock = 64;      // attention_tc_common.cuh kBlock: query rows per block, keys per tile
constexpr double kRows = 16;       // kRows: one warp's rows (one WMMA tile edge)
constexpr double kElemBytes = 2;   // bf16 / f16 operands
constexpr double kAccBytes = 4;    // fp32 scores and accumulators
constexpr double kFragBytes = kRows * kRows * kElemBytes;  // one 16x16 operand fragment
constexpr double kAccFragBytes = kRows * kRows * kAccBytes;
constexpr double kWavefrontBytes = 128;

// warp_gemm<kK = hd, kN = 4, transposed B>: S[16, 64] = A[16, hd]·Bᵀ, per output tile hd/16 pairs of
// operand fragments and one accumulator store.
double scores_bytes(double hd) { return kBlock / kRows * (hd / kRows * 2 * kFragBytes + kAccFragBytes); }
// warp_gemm<kK = 64, kN = hd/16, accumulate>: C[16, hd] += P[16, 64]·B[64, hd], per output tile the
// accumulator loaded and stored and 4 pairs of operand fragments.
double accumulate_bytes(double hd) {
  return hd / kRows * (2 * kAccFragBytes + kBlock / kRows * 2 * kFragBytes);
}
// load_rows of `tiles` [64, hd] 16-bit tiles, shared by the block's 4 warps.
double tile_load_bytes(double tiles, double hd) { return tiles * kBlock * hd * kElemBytes / (kBlock / kRows); }

}  // namespace

// tc_forward_kernel per warp and key tile: S = Q·Kᵀ; softmax_tile reads S (fp32), writes P (16-bit) and
// rescales the warp's O rows (fp32 read and write); O += P·V; the K and V tile loads.
double tensor_core_forward_shared_bytes_per_warp_tile(double hd) {
  const double softmax = kRows * (kBlock * kAccBytes + kBlock * kElemBytes + 2 * hd * kAccBytes);
  return scores_bytes(hd) + softmax + accumulate_bytes(hd) + tile_load_bytes(2, hd);
}

// tc_backward_dq_kernel per warp and key tile: S = Q·Kᵀ and dP = dO·Vᵀ, ds_rows reads both and writes dS,
// dQ += dS·K, the K and V tile loads. tc_backward_dkv_kernel per warp (16 keys) and query tile: Sᵀ and
// dPᵀ, pt_dst_rows reads both and the tile's lse and delta (64 fp32 each per row) and writes Pᵀ and dSᵀ,
// dV += Pᵀ·dO and dK += dSᵀ·Q, the Q and dO tile loads.
double tensor_core_backward_shared_bytes_per_warp_tile(double hd) {
  const double dq = 2 * scores_bytes(hd) + kRows * (2 * kBlock * kAccBytes + kBlock * kElemBytes) +
                    accumulate_bytes(hd) + tile_load_bytes(2, hd);
  const double dkv = 2 * scores_bytes(hd) + kRows * (4 * kBlock * kAccBytes + 2 * kBlock * kElemBytes) +
                     2 * accumulate_bytes(hd) + tile_load_bytes(2, hd);
  return dq + dkv;
}

// Per sequence and query head: ⌈s_q/64⌉ query blocks of 4 warps (causal_tile_pairs; cp > 1 only in a
// hand-written plan: the row keeps tensor_core to cp 1).
double tensor_core_warp_tiles(const RankDims& d) { return causal_tile_pairs(d, kBlock) * (kBlock / kRows); }

// FLOPs the WMMA tiles execute: `products` matrix products of 2·hd FLOPs per (row, key) over the 16 x 64
// (row, key) pairs of every warp tile (the diagonal tile in full, its masked half included).
static double executed_flops(const RankDims& d, double products) {
  return products * 2 * (d.q_dim / d.heads) * kRows * kBlock * tensor_core_warp_tiles(d);
}

KernelWork tensor_core_attention_forward(const RankDims& d) {
  KernelWork w;
  w.name = "attn_core";
  w.flops = executed_flops(d, 2);
  w.bytes = flash_layout_hbm_bytes(d, false);
  w.matmul = true;
  w.attention_seq = d.seq;
  w.shared_memory_wavefronts =
      tensor_core_warp_tiles(d) * tensor_core_forward_shared_bytes_per_warp_tile(d.q_dim / d.heads) / kWavefrontBytes;
  return w;
}

// Backward: 7 products (dQ: S, dP, dS·K; dK/dV: Sᵀ, dPᵀ, Pᵀ·dO, dSᵀ·Q) where FA2's has 5; HBM bytes as
// the CUDA-core backward's (same layout).
KernelWork tensor_core_attention_backward(const RankDims& d) {
  KernelWork w;
  w.name = "attn_core_bwd";
  w.flops = executed_flops(d, 7);
  w.bytes = flash_layout_hbm_bytes(d, true);
  w.matmul = true;
  w.attention_seq = d.seq;
  w.attention_backward = true;
  w.shared_memory_wavefronts =
      tensor_core_warp_tiles(d) * tensor_core_backward_shared_bytes_per_warp_tile(d.q_dim / d.heads) / kWavefrontBytes;
  return w;
}

}  // namespace fsdpx::compute_detail
