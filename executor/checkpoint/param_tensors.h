// executor/checkpoint/param_tensors.h — the full model's parameters as named safetensors tensors, one per
// TensorSlot of the ParamLayout (executor/runtime/param_layout.h), so that another program (PyTorch:
// tools/torch_reference.py) can start from or compare with fsdpx weights. Names: the slot's name
// prefixed by its module's ("block.3.qkv.weight", "embedding.tok.weight") unless it already starts
// with it ("final_norm.weight", "head.weight"). Shapes row-major as the CPU kernels use them: linear
// weights [out, in] with fused qkv [Q+2KV, C] (Q heads, then K heads, then V heads) and SwiGLU mlp_up
// [2F, C] (gate rows, then up rows); norm scales, shifts and biases 1-D. Leaves out optimizer moments.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "executor/checkpoint/safetensors.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

std::string param_tensor_name(const ModuleLayout& module, const TensorSlot& slot);
std::vector<std::int64_t> param_tensor_shape(const TensorSlot& slot);

// full [layout.total] fp32 parameters in layout order -> one F32 tensor per slot.
SafetensorsFile params_to_safetensors(const ParamLayout& layout, std::span<const float> full,
                                      std::map<std::string, std::string> metadata = {});

// The inverse: full [layout.total] in layout order. Every slot must be present as F32 with its shape,
// and no other tensor may be: ConfigError "<file>: /<name>...: <what>" otherwise.
std::vector<float> params_from_safetensors(const ParamLayout& layout, const SafetensorsFile& f,
                                           const std::string& file);

}  // namespace fsdpx
