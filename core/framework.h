// core/framework.h — the training stack a plan's prediction assumes: fsdpx's own executor (fused
// kernels, flat FSDP units), torchtitan (eager PyTorch, FSDP2), IBM's fms-fsdp (foundation-model-stack's
// eager PyTorch modules), llm-foundry (Composer, PyTorch FSDP1, MPT's fused kernels) or Megatron-LM / NeMo
// (Transformer Engine fused kernels, distributed optimizer), and whether the PyTorch stacks run under
// torch.compile. What each stack costs lives in
// cost_models/stack_costs.h; this file only names them. Leaves out DeepSpeed and JAX stacks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsdpx {

enum class Framework { fsdpx, torchtitan, fms_fsdp, llm_foundry, megatron };

constexpr std::string_view framework_name(Framework f) {
  switch (f) {
    case Framework::fsdpx: return "fsdpx";
    case Framework::torchtitan: return "torchtitan";
    case Framework::fms_fsdp: return "fms-fsdp";
    case Framework::llm_foundry: return "llm-foundry";
    case Framework::megatron: return "megatron";
  }
  return "fsdpx";
}

inline std::optional<Framework> framework_from_name(std::string_view s) {
  for (Framework f : {Framework::fsdpx, Framework::torchtitan, Framework::fms_fsdp, Framework::llm_foundry,
                      Framework::megatron})
    if (s == framework_name(f)) return f;
  return std::nullopt;
}

// torch.compile exists only for the PyTorch stacks; fsdpx's executor and Megatron run their own kernels.
constexpr bool framework_can_compile(Framework f) {
  return f == Framework::torchtitan || f == Framework::fms_fsdp || f == Framework::llm_foundry;
}

// The stack versions whose code differs in what fsdpx costs: torchtitan's releases (pytorch/torchtitan
// tags v0.1.0 2025-06-17, v0.2.0 2025-10-17, v0.2.1 2025-12-26, v0.2.2 2026-02-20) and "pre-0.1.0" for
// the commits before its first release (the 2024 runs of its docs/performance.md). Other stacks have
// none yet. A plan without a version takes the code every torchtitan before 0.2.2 shares.
inline const std::vector<std::string>& framework_versions(Framework f) {
  static const std::vector<std::string> torchtitan{"pre-0.1.0", "0.1.0", "0.2.0", "0.2.1", "0.2.2"};
  static const std::vector<std::string> none;
  return f == Framework::torchtitan ? torchtitan : none;
}

// torchtitan's Llama attention expands K and V to every query head with repeat_kv before SDPA up to
// v0.2.1 (torchtitan/models/llama3/model/model.py @v0.2.1, Attention.forward: keys = repeat_kv(xk,
// self.n_rep)) and passes enable_gqa to SDPA from v0.2.2 (@v0.2.2: self.enable_gqa = self.n_heads >
// self.n_kv_heads; "GQA without kv repeats", pytorch/torchtitan#2259). `version` empty: unstated.
inline bool torchtitan_repeats_kv(std::string_view version) { return version != "0.2.2"; }

}  // namespace fsdpx
