// executor/cpu_backend/micro_batch_models.cpp — the pool of per-micro-batch CPU models (see micro_batch_models.h).
#include "executor/cpu_backend/micro_batch_models.h"

namespace fsdpx {

MicroBatchModels::MicroBatchModels(const ModelSpec& model, std::int64_t micro_batch, std::int64_t seq,
                                   ModelOptions options)
    : MicroBatchPool<Transformer<float>>([model, b = micro_batch, t = seq, options = std::move(options)] {
        return std::make_unique<Transformer<float>>(model, b, t, options);
      }) {}

}  // namespace fsdpx
