// executor/cpu_backend/micro_batch_models.h — the CPU model's activations for every micro-batch a rank has
// in flight: a pool of fp32 Transformers (executor/runtime/micro_batch_pool.h), one per micro-batch from
// its first forward on this rank to its last backward. Leaves out sharing buffers between models.
#pragma once

#include "core/model_spec.h"
#include "executor/model/transformer.h"
#include "executor/runtime/micro_batch_pool.h"

namespace fsdpx {

class MicroBatchModels : public MicroBatchPool<Transformer<float>> {
 public:
  // Models of `model` over [micro_batch, seq] tokens.
  MicroBatchModels(const ModelSpec& model, std::int64_t micro_batch, std::int64_t seq, ModelOptions options);
};

}  // namespace fsdpx
