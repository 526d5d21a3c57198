// cost_models/expert_compute.h — the compute work of one MoE block's MLP on the slowest expert-parallel
// rank, as kernels for the roofline of cost_models/compute.h: the router GEMM and its top-k, the
// permutation of routed rows, the grouped SwiGLU expert GEMMs (one kernel over the rank's local experts,
// its shape factor read at the per-expert M = rows_per_expert, Anthony et al. 2024 §IV as
// gemm_shape_factor), and the shared experts as a dense SwiGLU. Expert FFN width splits over tp (etp =
// tp). Leaves out the aux-loss kernels (a few vector ops over tokens x experts) and token dropping.
#pragma once

#include <vector>

#include "core/dtype.h"
#include "core/model_spec.h"
#include "cost_models/compute.h"
#include "cost_models/expert_dispatch.h"

namespace fsdpx {

// Kernels of the MoE MLP (router through combine) for one pass; `tp` splits expert and shared FFN widths.
std::vector<KernelWork> moe_mlp_kernels(const ModelSpec& m, const RoutedLoad& l, int tp, DType act, Pass p);

// FLOPs of the routed expert GEMMs of one pass on the slowest rank: 3 GEMMs (gate, up, down) of
// 2 x rows x hidden x (ffn / tp) each; input-grad and weight-grad each do the same.
double routed_expert_flops(const ModelSpec& m, const RoutedLoad& l, int tp);

}  // namespace fsdpx
