// core/fp8.h — the plan's fp8 training recipe: which scaling the stack uses for the fp8 GEMMs of the
// blocks' linear layers and whether FSDP all-gathers those weights in fp8. Recipes as the stacks run them:
// torchao.float8 (torchtitan's `converters = ["float8"]`) with dynamic tensorwise or rowwise scales
// (torchao/float8/config.py, Float8LinearRecipeName), Transformer Engine with delayed or current scaling
// (transformer_engine/common/recipe: DelayedScaling, Float8CurrentScaling). Attention, norms, the
// embedding and the output head stay in bf16 (torchtitan's float8 converter skips "output"; Megatron's
// output layer is not a TE module). Leaves out MXFP8 and other block-scaled recipes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace fsdpx {

class JsonObject;
struct Plan;

enum class Fp8Scaling {
  tensorwise,  // torchao: one dynamic scale per tensor from its amax, cuBLAS tensorwise GEMM
  rowwise,     // torchao: dynamic scales per row (axiswise), CUTLASS rowwise GEMM; no fp8 all-gather
  delayed,     // Transformer Engine: scale from the amax history of earlier steps, amax fused in the cast
  current,     // Transformer Engine: scale from this tensor's amax (an amax pass before the cast)
};

struct Fp8Settings {
  Fp8Scaling scaling = Fp8Scaling::tensorwise;
  // FSDP all-gathers the linear weights in fp8 (torchao's enable_fsdp_float8_all_gather with
  // precompute_float8_dynamic_scale_for_fsdp; Megatron's fp8_param_gather): half the bytes of bf16.
  bool all_gather = false;
};

std::string_view fp8_scaling_name(Fp8Scaling s);
// Strict: false for an unknown name.
bool parse_fp8_scaling(std::string_view name, Fp8Scaling& out);
// Whether the recipe belongs to torchao (tensorwise, rowwise) rather than Transformer Engine.
bool fp8_is_torchao(Fp8Scaling s);

Fp8Settings parse_fp8_settings(JsonObject o);
nlohmann::json fp8_settings_to_json(const Fp8Settings& s);
// The plan's fp8 section against its GPU and recipe: the GPU needs an fp8 peak (Hopper, Blackwell),
// fp8 all-gather needs a per-tensor weight scale (torchao asserts it: "enable_fsdp_float8_all_gather only
// supports tensorwise scaling granularity") and bf16 compute around it. Throws ConfigError "<file>: /fp8...".
void check_fp8(const Plan& p, const std::string& file);

}  // namespace fsdpx
