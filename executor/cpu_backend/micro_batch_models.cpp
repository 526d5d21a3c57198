// executor/cpu_backend/micro_batch_models.cpp — the pool of per-micro-batch models (see micro_batch_models.h).
#include "executor/cpu_backend/micro_batch_models.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

MicroBatchModels::MicroBatchModels(const Plan& plan, ModelOptions options) : plan_(plan), options_(std::move(options)) {}

Transformer<float>& MicroBatchModels::at(int mb) {
  auto it = active_.find(mb);
  if (it == active_.end()) {
    for (auto f = active_.begin(); f != active_.end();) {
      if (!f->second.finished) {
        ++f;
        continue;
      }
      free_.push_back(f->second.model);
      f = active_.erase(f);
    }
    if (free_.empty()) {
      models_.push_back(std::make_unique<Transformer<float>>(plan_.model, plan_.training.micro_batch,
                                                             plan_.training.seq, options_));
      free_.push_back(int(models_.size()) - 1);
    }
    it = active_.emplace(mb, Active{free_.back(), 0, false}).first;
    free_.pop_back();
  }
  return *models_[std::size_t(it->second.model)];
}

const Transformer<float>& MicroBatchModels::get(int mb) const { return *models_[std::size_t(active(mb).model)]; }

MicroBatchModels::Active& MicroBatchModels::active(int mb) {
  auto it = active_.find(mb);
  FSDP_CHECK(it != active_.end(), fmt::format("MicroBatchModels: micro-batch {} has no model", mb));
  return it->second;
}

const MicroBatchModels::Active& MicroBatchModels::active(int mb) const {
  auto it = active_.find(mb);
  FSDP_CHECK(it != active_.end(), fmt::format("MicroBatchModels: micro-batch {} has no model", mb));
  return it->second;
}

void MicroBatchModels::forward_done(int mb) {
  Active& a = active(mb);
  ++a.pending;
  a.finished = false;
}

void MicroBatchModels::backward_done(int mb) {
  Active& a = active(mb);
  FSDP_CHECK(a.pending > 0, fmt::format("MicroBatchModels: a backward of micro-batch {} without its forward", mb));
  a.finished = --a.pending == 0;
}

}  // namespace fsdpx
