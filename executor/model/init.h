// executor/model/init.h — deterministic parameter initialisation that does not depend on world size,
// sharding or buffer layout: element e of module m gets a value that is a pure function of
// (seed, m, e) through a counter-based generator (splitmix64 hashing, Box-Muller), so any rank can
// initialise just its shard and the result equals the same slice of a single-rank init; a
// tensor-parallel layout draws each element by its index in the full module (TensorSlot::full_element),
// so every tp degree starts from the same model. Values follow
// GPT-2 / llm.c: N(0, 0.02) weights, residual projections N(0, 0.02/√(2L)), norm scales 1, biases 0.
// Leaves out loading pretrained weights.
#pragma once

#include <cstdint>

#include "executor/runtime/param_layout.h"

namespace fsdpx {

// The initial value of element `element` of module `module` of `layout` (computed in double).
double init_value(const ParamLayout& layout, std::uint64_t seed, int module, std::int64_t element);

// Uniform in (0, 1) for element `element` of the LoRA adapter buffer (executor/model/lora.h), from a
// stream no module's init uses.
double lora_uniform(std::uint64_t seed, std::int64_t element);

// out [end − begin] = elements [begin, end) of module `module`'s buffer.
template <class Real>
void init_module_range(const ParamLayout& layout, std::uint64_t seed, int module, std::int64_t begin,
                       std::int64_t end, Real* out);

// out [end − begin] = elements [begin, end) of the flat unit buffer (padding elements are 0): what rank
// r needs for its shard is begin = r·shard_numel, end = begin + shard_numel.
template <class Real>
void init_unit_range(const ParamLayout& layout, const FlatUnitLayout& unit, std::uint64_t seed, std::int64_t begin,
                     std::int64_t end, Real* out);

// out [layout.total]: the whole model, modules in forward order.
template <class Real>
void init_all(const ParamLayout& layout, std::uint64_t seed, Real* out);

}  // namespace fsdpx
