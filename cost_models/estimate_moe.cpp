// cost_models/estimate_moe.cpp — the part of `fsdpx estimate` that mixture-of-experts and latent-attention
// models have so far (issue 30), with expert parallelism 1 (every rank holds all experts, FSDP-sharded):
// total and active parameters, PaLM model FLOPs per token over the active parameters, and the
// parameter/gradient/optimizer bytes of all parameters under the sharding mode. Leaves out activations,
// unsharded units, overheads and every time figure: Estimate::not_modelled names them.
#include <fmt/format.h>

#include "core/errors.h"
#include "cost_models/estimate.h"
#include "cost_models/memory.h"
#include "cost_models/moe_params.h"

namespace fsdpx {

namespace {

[[noreturn]] void not_yet(const char* option, std::string_view what) {
  throw ConfigError(fmt::format("command line: {}: {} of mixture-of-experts and latent-attention models is not "
                                "modelled yet: issue 30", option, what));
}

}  // namespace

Estimate estimate_moe(const ModelSpec& m, const TrainingShape& s) {
  if (s.tp > 1) not_yet("--tp", "tensor parallelism");
  if (s.cp > 1) not_yet("--cp", "context parallelism");
  if (s.lora) not_yet("--lora-rank", "LoRA");
  if (s.fp8) not_yet("--fp8", "fp8 training");
  Estimate e;
  const MoeParamCounts pc = count_moe_params(m);
  e.total_params = pc.total();
  e.active_params = pc.active();
  e.params_per_gpu = double(e.total_params);  // tp = 1, ep = 1: every rank holds every expert before sharding
  // Parameter, gradient and optimizer bytes depend only on how many parameters a rank holds and the
  // sharding mode (cost_models/memory.h: FSDP2's sharded state, or ZeRO stages 1-2 and DDP).
  const bool fsdp = s.mode == ShardingMode::zero3 || s.mode == ShardingMode::hsdp;
  const StateBytes state = fsdp ? fsdp2_state_bytes(e.params_per_gpu, s.dp_shard, s.precision)
                                : model_state_bytes(e.params_per_gpu, s.mode, s.dp_shard, s.precision);
  e.memory.params = state.params;
  e.memory.grads = state.grads;
  e.memory.optimizer = state.optimizer;
  e.model_flops_per_token = moe_model_flops_per_token(m, s.seq);
  e.tokens_per_step = double(s.micro_batch) * double(s.seq) * double(s.grad_accum) * s.dp_replicate * s.dp_shard;
  e.not_modelled =
      "activations, unsharded-unit (transient) and overhead memory, and step time, of mixture-of-experts and "
      "latent-attention models are not modelled yet: issue 30";
  return e;
}

}  // namespace fsdpx
