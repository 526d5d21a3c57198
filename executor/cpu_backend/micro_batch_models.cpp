// executor/cpu_backend/micro_batch_models.cpp — the pool of per-micro-batch CPU models (see micro_batch_models.h).
#include "executor/cpu_backend/micro_batch_models.h"

namespace fsdpx {

MicroBatchModels::MicroBatchModels(const Plan& plan, ModelOptions options)
    : MicroBatchPool<Transformer<float>>([model = plan.model, b = plan.training.micro_batch, t = plan.training.seq,
                                          options = std::move(options)] {
        return std::make_unique<Transformer<float>>(model, b, t, options);
      }) {}

}  // namespace fsdpx
