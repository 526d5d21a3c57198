// executor/cuda_backend/cuda_lora.h — LoRA's adapter path on the device (Hu et al. 2021, §4.1), the twin
// of the CPU's lora_forward/lora_backward (executor/model/lora.h): four small cuBLASLt GEMMs per adapter
// (lora_gemm_plan.h) on 16-bit (T = bf16 or f16) adapters and activations with fp32 accumulation and fp32
// adapter gradients. Forward keeps u = x Aᵀ [N, r] per adapter for the backward; du [N, r] is T scratch.
// Leaves out adapter dropout and fusing an adapter's GEMMs with its base GEMM.
#pragma once

#include <cstdint>

#include "executor/cuda/gemm.h"
#include "executor/cuda/types.h"
#include "executor/model/lora_layout.h"

namespace fsdpx::cuda {

// One block's adapters: the block's part of the flat T adapter copy and, in backward, of the fp32
// gradient (layout null: no LoRA).
template <class T>
struct CudaLoraBlock {
  const LoraLayout* layout = nullptr;
  const T* params = nullptr;
  float* grads = nullptr;
};

// T elements of one block's saved u: one [N, r] per adapted projection (0 without LoRA).
std::int64_t lora_saved_elems(const LoraLayout* l, std::int64_t tokens);

// y [N, y_width], the adapter's columns [col, col + out) += s u Bᵀ with u = x Aᵀ (written to the slot's
// part of `saved_u`); x [N, in]. Nothing when `target` is not adapted.
template <class T>
void lora_forward16(GemmContext& gemm, const CudaLoraBlock<T>& b, LoraTarget target, const T* x, T* y,
                       std::int64_t y_width, std::int64_t n, T* saved_u, cudaStream_t stream);

// From dy [N, y_width] (the adapter's columns): dB += s dyᵀ u, du = s dy B (into `du` [N, r]),
// dA += duᵀ x, dx [N, in] += du A.
template <class T>
void lora_backward16(GemmContext& gemm, const CudaLoraBlock<T>& b, LoraTarget target, const T* x, const T* dy,
                        std::int64_t y_width, T* dx, std::int64_t n, const T* saved_u, T* du,
                        cudaStream_t stream);

}  // namespace fsdpx::cuda
