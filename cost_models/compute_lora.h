// cost_models/compute_lora.h — the kernels LoRA adds to a block (Hu et al. 2021, §4.1): per adapted
// projection W [out, in], forward u = x Aᵀ (2·T·r·in FLOPs) and y += s u Bᵀ (2·T·r·out), backward
// dB = dyᵀ u, du = dy B, dA = duᵀ x and dx += du A (4·T·r·(in + out)). The frozen base weights have no
// weight-gradient GEMMs (program/segment_work.cpp leaves them out); their input gradients still flow.
// Leaves out adapter dropout's mask kernels and tensor-parallel adapter slices.
#pragma once

#include <vector>

#include "core/lora.h"
#include "core/model_spec.h"
#include "cost_models/compute.h"

namespace fsdpx {

// Adapter kernels of one block for pass `p` (forward, or input_grad for the whole adapter backward:
// the adapters' weight gradients are computed with their input gradients; weight_grad: none).
std::vector<KernelWork> lora_block_kernels(const ModelSpec& m, const LoraSettings& l, const LayerShape& s, Pass p);

// Adapter FLOPs per token of forward + backward over the whole model: 6 · r · Σ (in + out) · layers.
double lora_flops_per_token(const ModelSpec& m, const LoraSettings& l);

}  // namespace fsdpx
