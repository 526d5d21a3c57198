// cost_models/lora_memory.h — per-GPU model state of LoRA fine-tuning (Hu et al. 2021, §4.1): the frozen
// base weights are sharded like FSDP parameters but have no gradients and no optimizer state, and with
// nothing to update they need no fp32 master (kept in the param dtype); the adapters are held whole by
// every rank with an fp32 master, an fp32 gradient and Adam's two fp32 moments (16 bytes per adapter
// parameter). Leaves out quantised bases (QLoRA) and sharded adapters.
#pragma once

#include "core/lora.h"
#include "core/model_spec.h"
#include "cost_models/memory.h"

namespace fsdpx {

// `base_params` (already divided by TP/PP) sharded over `shard_ranks`; `adapter_params` per rank.
StateBytes lora_state_bytes(double base_params, double adapter_params, int shard_ranks, DType param_dtype);

}  // namespace fsdpx
