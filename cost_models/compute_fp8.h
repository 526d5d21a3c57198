// cost_models/compute_fp8.h — a block's kernels under an fp8 recipe (core/fp8.h): its linear GEMMs run
// with fp8 operands at the fp8 peak in forward, input-gradient and weight-gradient passes, and the
// recipe's amax, cast and transpose kernels (memory-bound) are added before them. The attention core,
// norms and everything outside the blocks keep their bf16 kernels; casts fused into a producer (Inductor's
// amax, Transformer Engine's fp8-writing norm) cost no pass of their own. Leaves out the norm's smaller
// fp8 write, Transformer Engine's activation-fused casts and scale bookkeeping.
#pragma once

#include <vector>

#include "cost_models/compute.h"

namespace fsdpx {

// Whether a block kernel is one of the linear layers' GEMMs (wq/wk/wv or qkv, attn_out, w1/w3 or
// mlp_up, mlp_down, in any pass).
bool is_linear_gemm(const KernelWork& k);
// `ks` (one pass of a block, in execution order) with the recipe applied; `ks` unchanged without fp8.
std::vector<KernelWork> apply_fp8_recipe(std::vector<KernelWork> ks, const LayerShape& s, Pass p);
// Parameters of one block's linear layers (the weights an fp8 recipe casts), before TP: Q, K, V and the
// output projection, and the MLP's two (GELU) or three (SwiGLU) matrices. Biases and norms excluded.
double fp8_linear_params_per_block(const ModelSpec& m);
// The amax of `elems` local fp32 weights (torch._foreach_norm(ord=inf) in
// precompute_float8_dynamic_scale_for_fsdp, torchao/float8/fsdp_utils.py): one read.
KernelWork fp8_weight_amax_kernel(double elems);
// FP8 bytes per element of a linear weight as FSDP all-gathers it under `fp8` (1 with fp8 all-gather),
// else `param_bytes`.
double fp8_linear_gather_bytes(const std::optional<Fp8Settings>& fp8, double param_bytes);

}  // namespace fsdpx
