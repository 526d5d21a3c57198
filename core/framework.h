// core/framework.h — the training stack a plan's prediction assumes: fsdpx's own executor (fused
// kernels, flat FSDP units), torchtitan (eager PyTorch, FSDP2), llm-foundry (Composer, PyTorch FSDP1,
// MPT's fused kernels) or Megatron-LM / NeMo (Transformer Engine fused kernels, distributed optimizer),
// and whether the PyTorch stacks run under torch.compile. What each stack costs lives in
// cost_models/stack_costs.h; this file only names them. Leaves out DeepSpeed and JAX stacks.
#pragma once

#include <optional>
#include <string_view>

namespace fsdpx {

enum class Framework { fsdpx, torchtitan, llm_foundry, megatron };

constexpr std::string_view framework_name(Framework f) {
  switch (f) {
    case Framework::fsdpx: return "fsdpx";
    case Framework::torchtitan: return "torchtitan";
    case Framework::llm_foundry: return "llm-foundry";
    case Framework::megatron: return "megatron";
  }
  return "fsdpx";
}

inline std::optional<Framework> framework_from_name(std::string_view s) {
  for (Framework f : {Framework::fsdpx, Framework::torchtitan, Framework::llm_foundry, Framework::megatron})
    if (s == framework_name(f)) return f;
  return std::nullopt;
}

// torch.compile exists only for the PyTorch stacks; fsdpx's executor and Megatron run their own kernels.
constexpr bool framework_can_compile(Framework f) {
  return f == Framework::torchtitan || f == Framework::llm_foundry;
}

}  // namespace fsdpx
