// executor/model/block_tensor_names.h — where one block's tensors sit inside its module buffer, by their
// names in the parameter layout (executor/runtime/param_layout.cpp), for any element type: the CPU's
// float and double (block_tensors, block_dims.h) and the CUDA backend's bf16, f16 and float buffers
// (block_params16, cuda_backend/cuda_block.h) read the one list. Leaves out the shapes (block_dims.h).
#pragma once

#include "core/errors.h"
#include "executor/model/block_dims.h"

namespace fsdpx {

// The tensor `name` of module `m` inside the buffer at `base`; null when the block has no such tensor.
template <class P>
P tensor_at(const ModuleLayout& m, P base, const char* name) {
  const TensorSlot* t = m.find(name);
  return t ? base + t->offset : nullptr;
}

template <class P>
BlockTensors<P> block_tensors_at(const ModuleLayout& m, P base) {
  FSDP_CHECK(base != nullptr, "block_tensors: null buffer for " + m.name);
  return BlockTensors<P>{tensor_at(m, base, "attn_norm.weight"), tensor_at(m, base, "attn_norm.bias"),
                         tensor_at(m, base, "qkv.weight"),       tensor_at(m, base, "qkv.bias"),
                         tensor_at(m, base, "attn_out.weight"),  tensor_at(m, base, "attn_out.bias"),
                         tensor_at(m, base, "mlp_norm.weight"),  tensor_at(m, base, "mlp_norm.bias"),
                         tensor_at(m, base, "mlp_up.weight"),    tensor_at(m, base, "mlp_up.bias"),
                         tensor_at(m, base, "mlp_down.weight"),  tensor_at(m, base, "mlp_down.bias"),
                         tensor_at(m, base, "router.weight"),    tensor_at(m, base, "experts.mlp_up.weight"),
                         tensor_at(m, base, "experts.mlp_down.weight"),
                         tensor_at(m, base, "router.e_score_correction_bias"),
                         tensor_at(m, base, "shared.mlp_up.weight"),
                         tensor_at(m, base, "shared.mlp_down.weight"),
                         tensor_at(m, base, "attn.q_a.weight"),
                         tensor_at(m, base, "attn.q_a_norm.weight"),
                         tensor_at(m, base, "attn.q_b.weight"),
                         tensor_at(m, base, "attn.q.weight"),
                         tensor_at(m, base, "attn.kv_a.weight"),
                         tensor_at(m, base, "attn.kv_a_norm.weight"),
                         tensor_at(m, base, "attn.kv_b.weight")};
}

}  // namespace fsdpx
