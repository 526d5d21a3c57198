// cost_models/lora_memory.cpp — LoRA model state (see lora_memory.h).
#include "cost_models/lora_memory.h"

#include "core/errors.h"

namespace fsdpx {

StateBytes lora_state_bytes(double base_params, double adapter_params, int shard_ranks, DType param_dtype) {
  FSDP_CHECK(base_params >= 0 && adapter_params >= 0 && shard_ranks >= 1, "lora_state_bytes: bad inputs");
  StateBytes s;
  s.params = base_params * dtype_bytes(param_dtype) / shard_ranks + adapter_params * 4;
  s.grads = adapter_params * 4;
  s.optimizer = adapter_params * 8;  // Adam m and v in fp32
  return s;
}

}  // namespace fsdpx
