// executor/cuda_backend/cuda_lora.h — LoRA's adapter path on the device (Hu et al. 2021, §4.1), the twin
// of the CPU's lora_forward/lora_backward (executor/model/lora.h): four small cuBLASLt GEMMs per adapter
// (lora_gemm_plan.h) on bf16 adapters and activations with fp32 accumulation and fp32 adapter gradients.
// Forward keeps u = x Aᵀ [N, r] per adapter for the backward; the backward's du [N, r] is bf16 scratch.
// Leaves out adapter dropout and fusing an adapter's GEMMs with its base GEMM.
#pragma once

#include <cstdint>

#include "executor/cuda/gemm.h"
#include "executor/cuda/types.h"
#include "executor/model/lora.h"

namespace fsdpx::cuda {

// One block's adapters: the block's part of the flat bf16 adapter copy and, in backward, of the fp32
// gradient (layout null: no LoRA).
struct CudaLoraBlock {
  const LoraLayout* layout = nullptr;
  const bf16* params = nullptr;
  float* grads = nullptr;
};

// bf16 elements of one block's saved u: one [N, r] per adapted projection (0 without LoRA).
std::int64_t lora_saved_elems(const LoraLayout* l, std::int64_t tokens);

// y [N, y_width], the adapter's columns [col, col + out) += s u Bᵀ with u = x Aᵀ (written to the slot's
// part of `saved_u`); x [N, in]. Nothing when `target` is not adapted.
void lora_forward_bf16(GemmContext& gemm, const CudaLoraBlock& b, LoraTarget target, const bf16* x, bf16* y,
                       std::int64_t y_width, std::int64_t n, bf16* saved_u, cudaStream_t stream);

// From dy [N, y_width] (the adapter's columns): dB += s dyᵀ u, du = s dy B (into `du` [N, r]),
// dA += duᵀ x, dx [N, in] += du A.
void lora_backward_bf16(GemmContext& gemm, const CudaLoraBlock& b, LoraTarget target, const bf16* x, const bf16* dy,
                        std::int64_t y_width, bf16* dx, std::int64_t n, const bf16* saved_u, bf16* du,
                        cudaStream_t stream);

}  // namespace fsdpx::cuda
