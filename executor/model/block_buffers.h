// executor/model/block_buffers.h — the buffers of one transformer block, written once for both backends
// over a buffer policy B (the CPU's host vectors, model/block.h `CpuBlockBuffers`; the device's
// DeviceBuffer, cuda_backend/cuda_block.h `CudaBlockBuffers`): what its forward saves for its backward
// (BlockActsT, llm.c's ActivationTensors per layer), the backward scratch all blocks share
// (BlockScratchT) and what zero bubble's input pass keeps for the weight pass (BlockWeightInputsT), with
// their sizes and their bytes as allocated. Where the backends differ the policy says how: the attention
// core's keep (the CPU's softmax probabilities, the flash kernel's row log-sum-exp), the device kernels'
// scratch (flash backward, chunked norm and bias sums), what a split keeps of the norms, and the MoE and
// latent-attention parts (allocated by the model). Leaves out the model's own buffers (model_driver.h).
//
// B names: Buffer<X>; E (activations), S (norm statistics, the attention keep, device sums); Lora (LoRA's
// u per adapter) and MoeActs, MoeScratch, MlaActs, MlaScratch; static alloc(Buffer<X>&, n), bytes(buffer),
// parts_bytes(moe, mla); the element counts attention_keep_elems(d), attention_scratch_elems(d),
// norm_scratch_elems(d), bias_scratch_elems(d) (with biases); kKeepsNormGrads (a split keeps the norms'
// weight gradients [4·C], else their output gradients [N, C] each).
#pragma once

#include <cstdint>

#include "executor/model/block_dims.h"

namespace fsdpx {

// A block buffer of the policy's activations (E) and of its statistics (S).
template <class B>
using ActBuf = typename B::template Buffer<typename B::E>;
template <class B>
using StatBuf = typename B::template Buffer<typename B::S>;

// Under sequence parallelism the norm outputs ln1, ln2 hold all N tokens (gathered for the GEMMs);
// statistics and x_mid hold the rank's N_local tokens.
template <class B>
struct BlockActsT {
  ActBuf<B> ln1;                  // [N, C] attn_norm output (qkv input)
  StatBuf<B> ln1_mean, ln1_rstd;  // [N_local] (mean: LayerNorm only, else empty), [N_local]
  ActBuf<B> qkv;                  // [N, QKV] after RoPE
  StatBuf<B> att;                 // [attention_keep_elems] the attention core's keep (probabilities or lse)
  ActBuf<B> atty;                 // [N, Q] attention output (attn_out input)
  ActBuf<B> x_mid;                // [N_local, C] residual stream after attention
  ActBuf<B> ln2;                  // [N, C] mlp_norm output (mlp_up input)
  StatBuf<B> ln2_mean, ln2_rstd;  // [N_local] (LayerNorm only), [N_local]
  ActBuf<B> fc;                   // [N, FU] mlp_up output (pre-activation)
  ActBuf<B> fc_act;               // [N, F] activation output (mlp_down input)
  typename B::Lora lora_u;        // LoRA: u = x Aᵀ per adapted projection (lora.h, cuda_lora.h)
  typename B::MoeActs moe;        // an MoE block's MLP (allocated by its model)
  typename B::MlaActs mla;        // latent attention's chains (allocated by its model)

  // lora_u_elems: the device's [adapters, N, r] (0: none, or the CPU's, sized by its first forward).
  void allocate(const BlockDims& d, std::int64_t lora_u_elems = 0) {
    const std::int64_t n = d.n, nl = d.n_local, mean_n = d.layernorm ? nl : 0;  // RMSNorm has no mean
    B::alloc(ln1, n * d.c), B::alloc(ln1_mean, mean_n), B::alloc(ln1_rstd, nl);
    B::alloc(qkv, n * d.qkv);
    B::alloc(att, B::attention_keep_elems(d));
    B::alloc(atty, n * d.q);
    B::alloc(x_mid, nl * d.c);
    B::alloc(ln2, n * d.c), B::alloc(ln2_mean, mean_n), B::alloc(ln2_rstd, nl);
    B::alloc(fc, n * d.fu);
    B::alloc(fc_act, n * d.f);
    if (lora_u_elems > 0) B::alloc(lora_u, lora_u_elems);
  }
  std::int64_t bytes() const {  // 0 when not allocated
    return B::bytes(ln1) + B::bytes(ln1_mean) + B::bytes(ln1_rstd) + B::bytes(qkv) + B::bytes(att) +
           B::bytes(atty) + B::bytes(x_mid) + B::bytes(ln2) + B::bytes(ln2_mean) + B::bytes(ln2_rstd) +
           B::bytes(fc) + B::bytes(fc_act) + B::bytes(lora_u) + B::parts_bytes(moe, mla);
  }
};

// Overwritten per block (and by the final norm). With sequence parallelism `wide` [N, C] holds a
// row-parallel GEMM's partial output (forward) and the gathered output gradient (backward); with
// kv_heads < tp `qkv_part` [N, QKV_rows] and `qkv_all` [tp, N, QKV_rows] hold the rank's qkv GEMM output
// and the gathered one; with cp > 1 the K and V of whole sequences pass through kv_local [N, KVW],
// kv_gathered [cp, N, KVW] and kv_full, dkv_full [B, T_kv, KVW] (KVW = 2·KV_local). Empty unless needed.
template <class B>
struct BlockScratchT {
  ActBuf<B> dln, datty, dqkv, dfc, dfc_act;  // [N, C], [N, Q], [N, QKV], [N, FU], [N, F]
  StatBuf<B> attn;     // [attention_scratch_elems] the attention backward's (the flash kernel's delta)
  StatBuf<B> norm;     // [norm_scratch_elems] the norms' chunked dweight/dbias partial sums
  StatBuf<B> bias;     // [bias_scratch_elems] the biases' chunked sums (blocks with biases)
  ActBuf<B> lora_du;   // [N, r] an adapter's du (the device's LoRA)
  ActBuf<B> wide, qkv_part, qkv_all;
  ActBuf<B> kv_local, kv_gathered, kv_full, dkv_full;
  typename B::MoeScratch moe;  // MoE blocks (allocated by the model)
  typename B::MlaScratch mla;  // latent attention (allocated by the model)

  void allocate(const BlockDims& d, int tp = 1, bool has_bias = false, std::int64_t lora_rank = 0) {
    const std::int64_t n = d.n;
    B::alloc(dln, n * d.c), B::alloc(datty, n * d.q), B::alloc(dqkv, n * d.qkv);
    B::alloc(dfc, n * d.fu), B::alloc(dfc_act, n * d.f);
    B::alloc(attn, B::attention_scratch_elems(d)), B::alloc(norm, B::norm_scratch_elems(d));
    B::alloc(bias, has_bias ? B::bias_scratch_elems(d) : 0);
    B::alloc(lora_du, n * lora_rank);
    B::alloc(wide, d.n_local != d.n ? n * d.c : 0);
    if (d.grouped_qkv()) B::alloc(qkv_part, n * d.qkv_rows), B::alloc(qkv_all, n * d.qkv_rows * tp);
    if (!d.context_parallel()) return;
    const std::int64_t kvw = d.kv_width(), cp = d.t_kv / d.t, full = d.b * d.t_kv * kvw;
    B::alloc(kv_local, n * kvw), B::alloc(kv_gathered, cp * n * kvw);
    B::alloc(kv_full, full), B::alloc(dkv_full, full);
  }
  std::int64_t bytes() const {
    return B::bytes(dln) + B::bytes(datty) + B::bytes(dqkv) + B::bytes(dfc) + B::bytes(dfc_act) + B::bytes(attn) +
           B::bytes(norm) + B::bytes(bias) + B::bytes(lora_du) + B::bytes(wide) + B::bytes(qkv_part) +
           B::bytes(qkv_all) + B::bytes(kv_local) + B::bytes(kv_gathered) + B::bytes(kv_full) +
           B::bytes(dkv_full) + B::parts_bytes(moe, mla);
  }
};

// What zero bubble's weight pass of one block reads, kept by its input pass (Qi et al. 2023, §2: W
// needs each linear's output gradient and input; the inputs are activations the forward saved): the
// output gradients of mlp_down (d x_out), attn_out (d x_mid), mlp_up (dfc) and qkv (after RoPE's
// backward), and for the norms either their output gradients (the weight pass re-runs the norm backward
// without dinp) or, when the norm kernels compute their weight gradients with dinp, those in fp32.
template <class B>
struct BlockWeightInputsT {
  ActBuf<B> d_out, d_mid;  // [N, C]
  ActBuf<B> dfc, dqkv;     // [N, FU], [N, QKV]
  ActBuf<B> dln2, dln1;    // [N, C] the MLP norm's and the attention norm's output gradients (!kKeepsNormGrads)
  StatBuf<B> norm;         // [4·C] [attn_norm w, b, mlp_norm w, b] gradients (kKeepsNormGrads)

  void allocate(const BlockDims& d) {
    const std::int64_t n = d.n;
    B::alloc(d_out, n * d.c), B::alloc(d_mid, n * d.c);
    B::alloc(dfc, n * d.fu), B::alloc(dqkv, n * d.qkv);
    if (B::kKeepsNormGrads) B::alloc(norm, 4 * d.c);
    else B::alloc(dln2, n * d.c), B::alloc(dln1, n * d.c);
  }
  std::int64_t bytes() const {  // 0 when not allocated
    return B::bytes(d_out) + B::bytes(d_mid) + B::bytes(dfc) + B::bytes(dqkv) + B::bytes(dln2) + B::bytes(dln1) +
           B::bytes(norm);
  }
};

}  // namespace fsdpx
